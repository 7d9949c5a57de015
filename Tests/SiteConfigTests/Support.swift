import Foundation
@testable import SiteConfig

/// Paths of the repository and of this target's fixtures, found from this file's location so the
/// tests run from any working directory (and through the dev package's symlinks).
enum Paths {
    static let testsFolder = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    static let repository = testsFolder.deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = testsFolder.appendingPathComponent("Fixtures")

    static func fixture(_ relative: String) -> String { fixtures.appendingPathComponent(relative).path }
}

/// A loader whose environment is fixed, so `~` and the socket default do not depend on the machine.
let testEnvironment = ["HOME": "/home/tester"]
let loader = ConfigurationLoader(environment: testEnvironment)

/// The repository's own config.yaml, loaded (its plugins folder is where plugin sites look).
func repositoryConfig() throws -> DaemonConfig {
    try loader.loadConfig(at: Paths.repository.appendingPathComponent("config.yaml").path)
}

/// The config used for fixtures: defaults, plugins from Fixtures/plugins.
func fixtureConfig() -> DaemonConfig {
    var config = loader.defaultConfig(directory: Paths.fixtures.path)
    config.pluginsDirectory = Paths.fixture("plugins")
    return config
}

/// Loads a site from text as the file `name` inside Fixtures (so relative paths resolve there).
func site(_ text: String, name: String = "inline.yaml") throws(ConfigError) -> SiteDefinition {
    try loader.loadSite(text: text, file: Paths.fixture(name), config: fixtureConfig())
}

/// The diagnostics a site text produces (empty when it loads).
func problems(_ text: String, name: String = "inline.yaml") -> [ConfigDiagnostic] {
    do {
        _ = try site(text, name: name)
        return []
    } catch {
        return error.diagnostics
    }
}
