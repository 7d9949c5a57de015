import CookieJar
import Foundation
import Platform

/// Reading and writing jar files for the `jar` subcommands: `.json` files hold the lossless json format,
/// every other name the Netscape cookies.txt format curl and wget use.
enum JarFiles {
    /// The format a jar file is written in, from its name.
    static func format(forPath path: String) -> CookieFormat {
        path.lowercased().hasSuffix(".json") ? .json : .netscape
    }

    /// A `--format`/`--from` value, or a usage error listing the valid ones.
    static func parseFormat(_ text: String, option: String) throws -> CookieFormat {
        guard let format = CookieFormat(rawValue: text.lowercased()) else {
            let names = CookieFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw CLIFailure.usage("\(option): unknown format '\(text)' (expected one of \(names))")
        }
        return format
    }

    /// A `--url` value: an absolute http(s) URL with a host.
    static func parseURL(_ text: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              CookieRules.canonicalHost(of: url) != nil
        else {
            throw CLIFailure.usage("--url: '\(text)' is not an absolute http or https URL with a host")
        }
        return url
    }

    /// The file's text, nil when it does not exist and `missingIsEmpty`; a usage error when unreadable.
    static func readText(_ path: String, missingIsEmpty: Bool) throws -> String? {
        do {
            let bytes = try DurableFile.read(path)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw CLIFailure.usage("\(path): not UTF-8 text")
            }
            return text
        } catch let error as SystemError {
            if missingIsEmpty && error.errno == ENOENT { return nil }
            throw CLIFailure.usage("cannot read \(path): \(String(cString: strerror(error.errno)))")
        }
    }

    /// Loads a jar file's cookies. `format` nil: `.json` names are json, others Netscape unless the content
    /// is clearly another format.
    static func load(_ path: String, format: CookieFormat? = nil, now: Date, missingIsEmpty: Bool = false) throws -> [Cookie] {
        guard let text = try readText(path, missingIsEmpty: missingIsEmpty) else { return [] }
        let chosen = format ?? formatOfContent(text, path: path)
        do {
            return try CookieCodec.decode(text, as: chosen, url: nil, now: now)
        } catch {
            throw CLIFailure.usage("\(path): \(error)")
        }
    }

    private static func formatOfContent(_ text: String, path: String) -> CookieFormat {
        let byName = format(forPath: path)
        if byName == .json { return .json }
        switch CookieFormat.guess(from: text) {
        case .json?: return .json
        case .playwright?: return .playwright
        case .setCookie?: return .setCookie
        default: return .netscape
        }
    }

    /// A storage holding the file's cookies, with the clock at `now`.
    static func storage(loading path: String, now: Date, missingIsEmpty: Bool = false) throws -> CookieStorage {
        let storage = CookieStorage(acceptPolicy: .always, limits: CookieLimits(), clock: { now })
        for cookie in try load(path, now: now, missingIsEmpty: missingIsEmpty) { storage.setCookie(cookie) }
        return storage
    }

    /// Writes cookies atomically and durably with mode 0600 (cookie files are credentials).
    static func save(_ cookies: [Cookie], to path: String, format: CookieFormat) throws {
        let text = CookieCodec.encode(cookies, as: format)
        do {
            try DurableFile.write(Array(text.utf8), to: path, mode: 0o600)
        } catch {
            throw CLIFailure.failed("cannot write \(error)")
        }
    }
}
