// swift-tools-version: 6.1
import PackageDescription

// Module graph (docs/ARCHITECTURE.md explains each):
//   C shims:    CPSL  CYAML  CCurl  CXML2  CSQLite  CLinux   (one per C library, imported by exactly one Swift module)
//   Foundation: Locking (the one lock)  Platform (syscalls, child processes)  HTTPTransport (types + client protocols)
//   Values:     JSON (one parser, one writer, Codable over it; depends on nothing)
//   Engines:    CookieJar  XMLQuery  SiteConfig  CurlTransport  LoginFlow  Vault  Credentials  BrowserCookies  Egress
//   Sessions:   the one login path, the store seam (SessionStore, StoreChangeFeed), jar files
//   Stores:     Vault (the folder, the item crypto)  PostgresStore (fleet mode: items, leases, changes on PostgreSQL)
//   People:     Notify (notifications of sites that need a person)
//   Serving:    HTTPServer (one HTTP/1.1 core on SwiftNIO's own pipeline: the socket, the egress listeners, the demo site)
//   Daemon:     Scheduler (pure: SiteConfig only)  Daemon (the Keeper)  SocketAPI (the Unix-socket HTTP API, on HTTPServer)
//               Assembly (the daemon put together: stores, keeper, fleet leases, socket, notifiers, signals)
//   Clients:    SocketClient (the CLI's blocking HTTP/1.1 client on the socket)  SocketRoutes (the route table, server and clients)
//   Programs:   sessionkeeper (CLI)  demo-site
// Dependencies point one way: LoginFlow never imports CurlTransport, Scheduler never imports Sessions, Daemon never
// imports PostgresStore; only Assembly and the CLI wire real parts together.

/// Issue 14: `Fuzz/run` builds the libFuzzer targets with SESSIONKEEPER_FUZZ=1, in the same scratch path as the
/// tests. Only this package's modules then carry libFuzzer's coverage and AddressSanitizer (the fuzzers look for
/// bugs in our parsers, not in swift-nio's); the packages' objects the test build made are reused as they are,
/// so the fuzz build recompiles this package's modules and nothing else. Without the variable none of it exists.
let fuzzing = Context.environment["SESSIONKEEPER_FUZZ"] == "1"

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]
    + (fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address", "-enable-testing"])] : [])

/// Where Debian's libxml2-dev puts libxml2's headers, for the modules that import CXML2 (XMLQuery, and its tests
/// through `@testable import`). See CXML2 below for why pkg-config does not give it.
let libxml2Headers: [SwiftSetting] = [.unsafeFlags(["-Xcc", "-I/usr/include/libxml2"])]

let package = Package(
    name: "SessionKeeper",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "sessionkeeper", targets: ["sessionkeeper"]),
        .executable(name: "demo-site", targets: ["demo-site"]),
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "CookieJar", targets: ["CookieJar"]),
        .library(name: "SiteConfig", targets: ["SiteConfig"]),
        .library(name: "HTTPTransport", targets: ["HTTPTransport"]),
        .library(name: "CurlTransport", targets: ["CurlTransport"]),
        .library(name: "LoginFlow", targets: ["LoginFlow"]),
        .library(name: "Vault", targets: ["Vault"]),
        .library(name: "Sessions", targets: ["Sessions"]),
        .library(name: "Egress", targets: ["Egress"]),
        .library(name: "Platform", targets: ["Platform"]),
        .library(name: "DemoSite", targets: ["DemoSite"]),
        .library(name: "BrowserCookies", targets: ["BrowserCookies"]),
        .library(name: "Notify", targets: ["Notify"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        // HTTPServer: NIO's quiescing helper for graceful shutdown, and NIOHTTP1's heads as HTTPTypes' requests.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // GET /metrics: counters and histograms through swift-metrics, written by swift-prometheus.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Child processes (Platform.ChildProcess). Its one trait, SubprocessFoundation (Data inputs and
        // outputs), is left off: Platform hands bytes as [UInt8].
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2", traits: []),
        // Fleet mode's store (PostgresStore): the PostgreSQL wire protocol, LISTEN/NOTIFY included.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // TLS to the fleet's database (sslmode=require / verify-full), as postgres-nio takes it.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // MARK: C libraries (system packages, installed by .ci/run and the README's commands)
        .systemLibrary(name: "CPSL", pkgConfig: "libpsl", providers: [.apt(["libpsl-dev"])]),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // libcurl is bound with dlopen on first use (Sources/CCurl/shim.h says why), so CCurl links nothing and
        // needs no pkg-config flags: Debian installs curl/curl.h on the default include path.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libxml2 is bound with dlopen on first use too (Sources/CXML2/shim.h), so CXML2 links nothing. It takes no
        // pkg-config flags: SwiftPM would put pkg-config's `-lxml2` first on every link line, where no later
        // `--as-needed` reaches it, and every start of the program would load libxml2 and ICU again. Its headers'
        // folder (all that `pkg-config --cflags libxml-2.0` gives on Debian) is `libxml2Headers` below.
        .systemLibrary(name: "CXML2", providers: [.apt(["libxml2-dev"])]),
        // SQLite, to read browsers' cookie databases (`import --from-browser`); only BrowserCookies imports it.
        // Bound with dlopen on first use, as libcurl and libxml2 are (Sources/CSQLite/shim.h), so it links nothing.
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // Linux system calls the Swift Glibc module does not import (timerfd); libc itself, nothing to link.
        .systemLibrary(name: "CLinux"),

        // MARK: Libraries
        // The one in-process lock (a pthread mutex ThreadSanitizer can see), below every module that needs one.
        .target(name: "Locking", dependencies: ["SanitizerSettings"], swiftSettings: strict),
        // ThreadSanitizer's suppressions for swift-subprocess, compiled only into `--sanitize=thread` builds and
        // linked into every program through Locking (its file says why they are needed).
        .target(name: "SanitizerSettings"),
        .target(
            name: "Platform",
            dependencies: [
                "Locking",
                "CLinux",
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict
        ),
        // The CLI's blocking HTTP/1.1 client on the daemon's Unix socket, with its Server-Sent Events reader.
        .target(name: "SocketClient", dependencies: ["Locking", "Platform"], swiftSettings: strict),
        // The socket's route table, defined once for the server and its clients (methods, patterns, parameters,
        // targets); pure, no NIO, no Foundation. docs/socket-routes.json describes it for the Python client.
        .target(name: "SocketRoutes", swiftSettings: strict),
        .target(name: "JSON", swiftSettings: strict),
        .target(name: "CookieJar", dependencies: ["Locking", "CPSL", "JSON"], swiftSettings: strict),
        .target(name: "XMLQuery", dependencies: ["Locking", "CXML2"], swiftSettings: strict + libxml2Headers),
        .target(name: "SiteConfig", dependencies: ["Locking", "CYAML", "XMLQuery", "JSON", "Platform"], swiftSettings: strict),
        .target(name: "HTTPTransport", swiftSettings: strict),
        .target(name: "CurlTransport", dependencies: ["Locking", "CCurl", "HTTPTransport"], swiftSettings: strict),
        .target(
            name: "LoginFlow",
            dependencies: ["Locking", "HTTPTransport", "CookieJar", "SiteConfig", "XMLQuery", "JSON", "Platform"],
            swiftSettings: strict
        ),
        .target(
            name: "Vault",
            dependencies: [
                "Locking",
                "Platform",
                "JSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PostgresStore",
            dependencies: [
                "Locking", "Vault", "Sessions", "SiteConfig", "Platform",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Credentials",
            dependencies: ["Locking", "Vault", "SiteConfig", "Platform", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .target(
            name: "Sessions",
            dependencies: ["Locking", "CookieJar", "SiteConfig", "HTTPTransport", "LoginFlow", "Vault", "Credentials", "Platform"],
            swiftSettings: strict
        ),
        // The egress route's pure rules: whether an answer is logged out (SPEC section 10).
        .target(name: "Egress", dependencies: ["SiteConfig", "HTTPTransport"], swiftSettings: strict),
        .target(name: "Scheduler", dependencies: ["SiteConfig"], swiftSettings: strict),
        .target(
            name: "BrowserCookies",
            dependencies: [
                "CSQLite", "CookieJar", "Platform", "JSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Notify",
            dependencies: [
                "Locking", "SiteConfig", "Scheduler", "HTTPTransport", "JSON", "Platform",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Daemon",
            dependencies: [
                "Locking",
                "Scheduler", "Sessions", "SiteConfig", "LoginFlow", "HTTPTransport", "CookieJar", "Platform",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // One HTTP/1.1 server core on SwiftNIO's own pipeline, for the socket, the egress listeners and the demo site:
        // NIOHTTP1's codec and one channel handler per connection, answers written on the event loop.
        .target(
            name: "HTTPServer",
            dependencies: [
                "Locking",
                "CookieJar",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SocketAPI",
            dependencies: [
                "Locking",
                "Daemon", "Scheduler", "Sessions", "SiteConfig", "CookieJar", "JSON", "Platform",
                "Egress", "HTTPTransport", "LoginFlow", "HTTPServer", "SocketRoutes",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The daemon put together (what `sessionkeeper run` runs, callable by tests): the store, the login path,
        // the keeper, fleet mode's lease service, the socket, the notifiers and the signals, in one ServiceGroup.
        // It sits above Daemon and PostgresStore so that Daemon need not know the fleet's database.
        .target(
            name: "Assembly",
            dependencies: [
                "Locking", "Daemon", "SocketAPI", "Notify", "PostgresStore", "Sessions", "Vault", "Credentials", "CurlTransport", "Scheduler",
                "SiteConfig", "Platform",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "DemoSite",
            dependencies: [
                "Locking", "HTTPServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // MARK: Programs
        .executableTarget(
            name: "sessionkeeper",
            dependencies: [
                "Locking",
                "CookieJar", "SiteConfig", "HTTPTransport", "CurlTransport", "LoginFlow", "Vault", "Credentials",
                "Platform", "Sessions", "Daemon", "JSON", "SocketClient", "SocketRoutes", "PostgresStore", "BrowserCookies", "Assembly",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict,
            // Client commands start in about a curl's time. A release binary links with lld so that its ~120,000
            // relative relocations are packed (DT_RELR: 24 KB instead of 2.8 MB read and kept at every start), and
            // exports no symbols (nothing loads against the executable; an exported table of 32,000 Swift symbols
            // was read at every start). scripts/build-release adds --static-swift-stdlib, which cannot be set here.
            // docs/BENCHMARKS.md ("Client start-up") has the figures.
            linkerSettings: [
                .unsafeFlags(
                    [
                        "-use-ld=lld",
                        "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
                    ],
                    .when(platforms: [.linux], configuration: .release)
                ),
            ]
        ),
        .executableTarget(
            name: "demo-site",
            dependencies: ["DemoSite", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),

        // MARK: Tests (one target per module; fixtures as files beside them)
        // Shared by the test targets: blocking waits on dedicated threads, child processes run to their end.
        .target(
            name: "TestSupport", dependencies: ["Locking", "Platform", "SanitizerSettings", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport", swiftSettings: strict),
        // The crash test's child (VaultTests/CrashTests): writes vault items until killed. Built for the tests
        // only, so the shipped sessionkeeper carries no test subcommand.
        .executableTarget(
            name: "vault-crash-writer",
            dependencies: ["Vault", "TestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/VaultCrashWriter",
            swiftSettings: strict
        ),
        // The streaming memory tests' child (CurlTransportTests/StreamingMemoryTests): streams one large body and
        // reports its own RssAnon, in a process where no other test allocates.
        .executableTarget(
            name: "stream-memory-probe",
            dependencies: [
                "CurlTransport", "HTTPTransport", "Locking", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/StreamMemoryProbe",
            swiftSettings: strict
        ),
        // The child-exit tests' child (PlatformTests/ChildExitTests) and Benchmarks/run-child-exit's program: runs
        // short children while its cores are kept busy, in a process where no test blocks the cooperative pool.
        .executableTarget(
            name: "child-exit-probe",
            dependencies: [
                "Locking", "Platform", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/ChildExitProbe",
            swiftSettings: strict
        ),
        .testTarget(name: "LockingTests", dependencies: ["Locking"], swiftSettings: strict),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(
            name: "CookieJarTests", dependencies: ["Locking", "CookieJar", "JSON", "TestSupport"], resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(name: "XMLQueryTests", dependencies: ["XMLQuery"], swiftSettings: strict + libxml2Headers),
        .testTarget(name: "SiteConfigTests", dependencies: ["SiteConfig", "TestSupport"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(name: "HTTPTransportTests", dependencies: ["HTTPTransport"], swiftSettings: strict),
        .testTarget(
            name: "CurlTransportTests",
            dependencies: [
                "CurlTransport", "HTTPTransport", "Platform", "TestSupport", "Locking",
                // SHA-256 of the streamed upload test's body, compared with the server's.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")], swiftSettings: strict
        ),
        .testTarget(
            name: "LoginFlowTests",
            dependencies: ["Locking", "LoginFlow", "HTTPTransport", "CurlTransport", "DemoSite", "CookieJar", "SiteConfig", "JSON", "TestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DemoSiteTests",
            dependencies: [
                "Locking",
                "DemoSite",
                "Platform",
                "CurlTransport",
                "HTTPTransport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "TestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: [
                "HTTPServer", "Locking", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "PlatformTests", dependencies: ["Locking", "Platform", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SocketRoutesTests", dependencies: ["SocketRoutes", "JSON"], swiftSettings: strict),
        .testTarget(name: "SocketClientTests", dependencies: ["SocketClient", "TestSupport"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(
            name: "VaultTests", dependencies: ["Locking", "Vault", "Credentials", "Platform", "SiteConfig", "TestSupport"],
            resources: [.copy("Fixtures")], swiftSettings: strict
        ),
        .testTarget(
            name: "SessionsTests",
            dependencies: [
                "Locking", "Sessions", "LoginFlow", "CookieJar", "SiteConfig", "HTTPTransport", "CurlTransport", "Vault", "Credentials",
                "DemoSite", "TestSupport",
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "EgressTests", dependencies: ["Egress", "SiteConfig", "HTTPTransport", "JSON"], resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(name: "SchedulerTests", dependencies: ["Scheduler", "SiteConfig"], swiftSettings: strict),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "Locking",
                "Daemon", "Scheduler", "Sessions", "SiteConfig", "CurlTransport", "DemoSite", "Vault", "TestSupport",
                "LoginFlow", "HTTPTransport", "JSON",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SocketAPITests",
            dependencies: [
                "Locking",
                "SocketAPI", "Daemon", "Scheduler", "Sessions", "SiteConfig", "CurlTransport", "DemoSite", "Vault", "Platform",
                "JSON", "LoginFlow", "TestSupport", "CookieJar", "SocketClient", "SocketRoutes",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AssemblyTests",
            dependencies: [
                "Assembly", "DemoSite", "SiteConfig", "SocketClient", "Platform", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: [
                "Locking", "PostgresStore", "Vault", "Sessions", "SiteConfig", "CookieJar", "Platform", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "CookieJar", "JSON", "Platform", "TestSupport",
                // Chromium's cookie encryption, for the profiles `import --from-browser` reads.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BrowserCookiesTests",
            dependencies: [
                "BrowserCookies", "CookieJar", "JSON", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "NotifyTests",
            dependencies: [
                "Locking", "Notify", "SiteConfig", "Scheduler", "HTTPTransport", "CurlTransport", "JSON", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
    ]
)

// MARK: Fuzz targets (issue 14; only with SESSIONKEEPER_FUZZ=1, see `fuzzing` above). Each file under Fuzz/Sources is
// one target: its `main` hands libFuzzer's driver (linked from the toolchain's libclang_rt.fuzzer_no_main, whose
// path Fuzz/run passes in SESSIONKEEPER_LIBFUZZER) the function that drives the project's modules with one input.
if fuzzing {
    package.targets.append(.systemLibrary(name: "CLibFuzzer", path: "Fuzz/Sources/CLibFuzzer"))
    package.targets.append(.target(name: "FuzzDriver", dependencies: ["CLibFuzzer"], path: "Fuzz/Sources/FuzzDriver", swiftSettings: strict))
    let libFuzzer = Context.environment["SESSIONKEEPER_LIBFUZZER"] ?? "libclang_rt.fuzzer_no_main-x86_64.a"
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        // Set-Cookie parser and jar: a header line per input line against a URL, the jar's rules checked.
        ("FuzzSetCookie", ["CookieJar"]),
        // YAML loader and site validation: config.yaml and site files.
        ("FuzzSiteConfig", ["SiteConfig"]),
        // Every cookie import format, guessed or named, as `sessionkeeper import` reads it.
        ("FuzzCookieImport", ["CookieJar"]),
        // The plugin's answer on stdout (SPEC section 5).
        ("FuzzPluginAnswer", ["LoginFlow", "CookieJar", "SiteConfig", "HTTPTransport"]),
        // The socket's request handling: route matching, query parameters, Set-Cookie bodies.
        (
            "FuzzSocketRequest",
            [
                "SocketAPI", "SocketRoutes", "CookieJar", "SiteConfig", "HTTPServer",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name,
                dependencies: ["FuzzDriver"] + target.dependencies,
                path: "Fuzz/Sources/\(target.name)",
                swiftSettings: strict,
                linkerSettings: [.unsafeFlags(["-sanitize=address", "-use-ld=lld", "-Xlinker", libFuzzer, "-lstdc++"])]
            )
        )
    }
}
