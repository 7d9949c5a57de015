import Foundation
import SiteConfig

/// The sites of `sites_dir` as the daemon keeps them (SPEC section 7): each file's last good definition.
/// A file that fails to parse leaves its site on the definition it had; a deleted file removes its site;
/// a renamed file is one site going and another coming. Editors' temporary and backup files are never
/// read as sites.
public struct SiteCatalog: Sendable {
    /// What a reload changed, for the log.
    public struct Report: Sendable {
        /// Files that failed to parse (every diagnostic with its file, line and column). Their sites keep
        /// their last good definition.
        public var failures: [ConfigError] = []
        /// Files read again without error.
        public var loaded: [String] = []
        /// Files that are gone, with the sites they held.
        public var removed: [String] = []
        /// Files that failed to load before and loaded without error now.
        public var recovered: [String] = []
    }

    /// Last good definition per file path.
    public private(set) var byFile: [String: SiteDefinition] = [:]
    /// The files whose last read failed, with its diagnostics, by path (a failing file may have a last good
    /// definition in ``byFile`` or none).
    public private(set) var failing: [String: ConfigError] = [:]

    public init() {}

    /// Every site, once per name (the first file in name order wins; the loader reports duplicates).
    public var sites: [SiteDefinition] {
        var seen = Set<String>()
        return byFile.keys.sorted().compactMap { file in
            guard let site = byFile[file], seen.insert(site.name).inserted else { return nil }
            return site
        }
    }

    /// Whether `name` (a file name in `sites_dir`) can be a site file: `*.yaml` or `*.yml`, not hidden,
    /// and not an editor's swap, backup or temporary file (`.x.swp`, `x.yaml~`, `#x.yaml#`,
    /// `x.yaml.tmp`, `.#x.yaml`).
    public static func isSiteFileName(_ name: String) -> Bool {
        guard !name.hasPrefix("."), !name.hasPrefix("#"), !name.hasSuffix("~") else { return false }
        return ConfigurationLoader.siteFileExtensions.contains((name as NSString).pathExtension)
    }

    /// Reads every site file again (start and SIGHUP).
    public mutating func reloadAll(loader: ConfigurationLoader, config: DaemonConfig) -> Report {
        var report = Report()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: config.sitesDirectory)) ?? []
        let files = Set(names.filter(Self.isSiteFileName).map { (config.sitesDirectory as NSString).appendingPathComponent($0) })
        for file in byFile.keys where !files.contains(file) {
            byFile[file] = nil
            report.removed.append(file)
        }
        for file in failing.keys where !files.contains(file) { failing[file] = nil }
        for file in files.sorted() { load(file, loader: loader, config: config, into: &report) }
        return report
    }

    /// Reads the files named in one batch of changes (names inside `sites_dir`).
    public mutating func reload(names: [String], loader: ConfigurationLoader, config: DaemonConfig) -> Report {
        var report = Report()
        for name in Set(names).sorted() where Self.isSiteFileName(name) {
            let file = (config.sitesDirectory as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: file) {
                load(file, loader: loader, config: config, into: &report)
            } else {
                failing[file] = nil
                if byFile.removeValue(forKey: file) != nil { report.removed.append(file) }
            }
        }
        return report
    }

    private mutating func load(_ file: String, loader: ConfigurationLoader, config: DaemonConfig, into report: inout Report) {
        do {
            byFile[file] = try loader.loadSite(at: file, config: config)
            report.loaded.append(file)
            if failing.removeValue(forKey: file) != nil { report.recovered.append(file) }
        } catch {
            report.failures.append(error)
            failing[file] = error
        }
    }
}
