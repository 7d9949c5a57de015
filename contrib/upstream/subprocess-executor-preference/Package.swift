// swift-tools-version: 6.1
// A minimal reproduction for swift-subprocess, ready to report upstream (README.md): a run started under a task
// executor preference still needs a thread of Swift's cooperative pool before it returns.
import PackageDescription

let package = Package(
    name: "subprocess-executor-preference",
    dependencies: [.package(url: "https://github.com/swiftlang/swift-subprocess", exact: "1.0.2")],
    targets: [
        .executableTarget(
            name: "Reproduction",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
