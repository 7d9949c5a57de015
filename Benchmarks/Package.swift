// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the test build never carries them. Plain executables timed with
// ContinuousClock and getrusage; `Benchmarks/run` builds them in release mode and prints docs/BENCHMARKS.md's
// tables.
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "SessionKeeperBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SessionKeeper", path: ".."),
        // The socket benchmark's floor (NIOFloor): SwiftNIO's own HTTP/1 pipeline, which the daemon's socket is built on, alone.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    ],
    targets: [
        // libcurl called directly, for its own cookie parser (target names are unique across the package graph,
        // so this is not the main package's CCurl).
        .systemLibrary(name: "CCurlBenchmark", pkgConfig: "libcurl"),
        .executableTarget(
            name: "JarBenchmark",
            dependencies: [.product(name: "CookieJar", package: "SessionKeeper"), "CCurlBenchmark"],
            swiftSettings: strict
        ),
        // The demo login as a site file, literal credentials, CPU time: shared by the login benchmarks.
        .target(
            name: "LoginBenchmarkSupport",
            dependencies: [
                .product(name: "LoginFlow", package: "SessionKeeper"),
                .product(name: "SiteConfig", package: "SessionKeeper"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "LoginBenchmark",
            dependencies: [
                "LoginBenchmarkSupport",
                .product(name: "CookieJar", package: "SessionKeeper"),
                .product(name: "CurlTransport", package: "SessionKeeper"),
                .product(name: "HTTPTransport", package: "SessionKeeper"),
                .product(name: "LoginFlow", package: "SessionKeeper"),
                .product(name: "SiteConfig", package: "SessionKeeper"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "FlowBenchmark",
            dependencies: [
                "LoginBenchmarkSupport",
                .product(name: "CookieJar", package: "SessionKeeper"),
                .product(name: "HTTPTransport", package: "SessionKeeper"),
                .product(name: "LoginFlow", package: "SessionKeeper"),
                .product(name: "SiteConfig", package: "SessionKeeper"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ConfigBenchmark",
            dependencies: [.product(name: "SiteConfig", package: "SessionKeeper")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "VaultBenchmark",
            dependencies: [
                .product(name: "Vault", package: "SessionKeeper"),
                .product(name: "Platform", package: "SessionKeeper"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "NIOFloor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The floor for anything built on libcurl: the same login in plain C.
        .executableTarget(name: "CurlLoginFloor", linkerSettings: [.linkedLibrary("curl")]),
    ]
)
