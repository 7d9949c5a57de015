import Foundation
import SiteConfig

// MARK: Site files that failed to load, for `status` (today's error, not only a line in the log)

/// A site file whose last read failed: its site, if it had loaded before, runs on its last good definition.
public struct SiteFileFailure: Sendable, Hashable {
    /// The file's path.
    public var file: String
    /// Every diagnostic, as `FILE:LINE:COLUMN: error: message` (no source line: a line may hold a credential).
    public var errors: [String]

    public init(file: String, errors: [String]) {
        self.file = file
        self.errors = errors
    }

    /// The catalog's failing files, sorted by path.
    public static func all(in catalog: SiteCatalog) -> [SiteFileFailure] {
        catalog.failing.keys.sorted().compactMap { file in
            catalog.failing[file].map { SiteFileFailure(file: file, errors: DiagnosticRenderer(showSource: false).render($0, source: nil)) }
        }
    }
}

extension Keeper {
    /// Replaces the site files known to have failed (after every reload of the sites folder).
    public func siteFilesFailed(_ failures: [SiteFileFailure]) {
        failedFiles = failures
    }

    /// The site files that failed to load at the last reload, sorted by path.
    public func failedSiteFiles() -> [SiteFileFailure] { failedFiles }
}
