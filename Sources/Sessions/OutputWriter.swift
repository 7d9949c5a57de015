import CookieJar
import Foundation
import Platform
import SiteConfig

/// Writes a site's `outputs:` files (SPEC section 3): each one rewritten atomically and durably in its
/// format and with its mode, as Vault Agent's sinks are, whenever the site's cookies change.
public enum OutputWriter {
    /// Why one output file could not be written (its path and the system's reason; never a cookie value).
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// Writes `cookies` to every output of `site`; returns the failures (an empty list when all were
    /// written). One file failing never stops the others.
    public static func write(_ cookies: [Cookie], outputs: [OutputFile]) -> [Failure] {
        var failures: [Failure] = []
        for output in outputs {
            do throws(Failure) {
                try write(cookies, to: output)
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// Writes one output file (`origins`, a browser login's localStorage, go into a `playwright` one). A
    /// missing parent folder is created with mode 0700 (cookie files are credentials); an existing one is
    /// left as it is.
    public static func write(_ cookies: [Cookie], origins: [StorageOrigin] = [], to output: OutputFile) throws(Failure) {
        let text = CookieCodec.encode(cookies, as: format(output.format), origins: origins)
        let folder = (output.path as NSString).deletingLastPathComponent
        do throws(SystemError) {
            if !folder.isEmpty && !Syscall.exists(folder) {
                try DurableFile.makePrivateFolder(folder)
            }
            try DurableFile.write(Array(text.utf8), to: output.path, mode: mode_t(output.mode))
        } catch {
            throw Failure(path: output.path, reason: String(cString: strerror(error.errno)))
        }
    }

    static func format(_ format: OutputFile.Format) -> CookieFormat {
        switch format {
        case .header: .header
        case .setCookie: .setCookie
        case .netscape: .netscape
        case .json: .json
        case .playwright: .playwright
        }
    }
}
