// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets (issue 14), in their own package so the test build never carries them. `Fuzz/run` builds
// them with `swift build --sanitize fuzzer --sanitize address` into ../.build-fuzz (SwiftPM then links
// libFuzzer's main instead of the executable's own) and runs them; each file is one target whose
// LLVMFuzzerTestOneInput drives the project's own modules. @testable imports reach the internal pure
// functions of LoginFlow and SocketAPI: the debug build that `Fuzz/run` makes enables testability.
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "SessionKeeperFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SessionKeeper", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // Set-Cookie parser and jar: a header line per input line against a URL, the jar's rules checked.
        .executableTarget(
            name: "FuzzSetCookie",
            dependencies: [.product(name: "CookieJar", package: "SessionKeeper")],
            swiftSettings: strict
        ),
        // YAML loader and site validation: config.yaml and site files.
        .executableTarget(
            name: "FuzzSiteConfig",
            dependencies: [.product(name: "SiteConfig", package: "SessionKeeper")],
            swiftSettings: strict
        ),
        // Every cookie import format, guessed or named, as `sessionkeeper import` reads it.
        .executableTarget(
            name: "FuzzCookieImport",
            dependencies: [.product(name: "CookieJar", package: "SessionKeeper")],
            swiftSettings: strict
        ),
        // The plugin's answer on stdout (SPEC section 5).
        .executableTarget(
            name: "FuzzPluginAnswer",
            dependencies: [
                .product(name: "LoginFlow", package: "SessionKeeper"),
                .product(name: "CookieJar", package: "SessionKeeper"),
                .product(name: "SiteConfig", package: "SessionKeeper"),
            ],
            swiftSettings: strict
        ),
        // The socket's request handling: route matching, query parameters, Set-Cookie bodies.
        .executableTarget(
            name: "FuzzSocketRequest",
            dependencies: [
                .product(name: "SocketAPI", package: "SessionKeeper"),
                .product(name: "CookieJar", package: "SessionKeeper"),
                .product(name: "SiteConfig", package: "SessionKeeper"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
    ]
)
