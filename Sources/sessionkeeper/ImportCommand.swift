import ArgumentParser
import Assembly
import BrowserCookies
import CookieJar
import Foundation
import LoginFlow
import Sessions
import SiteConfig
import Vault

/// `sessionkeeper import SITE FILE [--format F] [--user-agent UA]` and `sessionkeeper import SITE
/// --from-browser firefox[:PROFILE]|chromium[:PROFILE]` (SPEC sections 3 and 9): seeds a site's session in the
/// vault from a cookie file, such as a browser's export for a `login: manual` site, or from a browser
/// profile's own cookie store (`BrowserCookies`).
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Store a site's session from a cookie file or a browser profile (for login: manual sites, or to seed any site).",
        discussion: """
            FILE ('-' for standard input) may be Netscape cookies.txt, the json format, Playwright's \
            storageState, Set-Cookie lines, a response header dump (curl -D -), or a Cookie header value \
            (a=1; b=2, taken as host-only cookies of base_url); the format is guessed from the content unless \
            --format names it. --from-browser reads a browser profile's cookie store on Linux instead: \
            firefox (the default profile in ~/.mozilla/firefox/profiles.ini), firefox:NAME, chromium \
            (~/.config/chromium/Default), chromium:NAME (a profile's folder name or the name Chromium shows), or \
            a profile's folder (firefox:/path/to/profile); it may run while the browser does. Chromium's v11 \
            values need the desktop keyring (secret-tool lookup application chromium). \
            Every cookie passes through the jar's rules for the site's base_url: Set-Cookie \
            lines are read as a response from base_url, and only cookies within base_url's registrable domain \
            are kept (cookies.accept: never keeps none); each refused cookie is named with the reason, never \
            its value. The accepted cookies replace the site's stored session; a running daemon reads the \
            vault afresh and keeps the session alive from there. Exit status: 0 stored; 1 no cookie accepted \
            or the vault failed; 2 usage, configuration, an unreadable file or browser profile.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Argument(help: "The cookie file, or '-' for standard input (not with --from-browser).")
    var file: String?

    @Option(name: .customLong("from-browser"), help: "firefox[:PROFILE] or chromium[:PROFILE]: read the browser profile's cookies instead of a file.")
    var fromBrowser: String?

    @Option(name: .long, help: "netscape, json, playwright, set-cookie or header (default: guessed from the content).")
    var format: String?

    @Option(name: .customLong("user-agent"), help: "The User-Agent of the browser the cookies come from (default: the site's http.user_agent).")
    var userAgent: String?

    @OptionGroup var config: ConfigOptions

    func validate() throws {
        switch (file, fromBrowser) {
        case (nil, nil): throw ValidationError("give a cookie FILE, or --from-browser firefox[:PROFILE]|chromium[:PROFILE]")
        case (_?, _?): throw ValidationError("give either a cookie FILE or --from-browser, not both")
        case (_, _?) where format != nil: throw ValidationError("--format applies to a cookie FILE, not to --from-browser")
        default: break
        }
    }

    func run() async throws {
        try await reportingFailures {
            try VaultAccess.protectProcess()
            let (daemonConfig, definition) = try LoginSetup.load(site: site, explicitConfig: config.path)
            let now = Date()
            let source: String
            let decisions: [CookieDecision]
            let jar: CookieStorage
            if let fromBrowser {
                let selection = try await Self.readBrowser(fromBrowser, site: definition, now: now)
                source = "the \(selection.profile) profile"
                let admitted = CookieImport.admit(selection.cookies, site: definition, now: now)
                (decisions, jar) = (selection.refused + admitted.decisions, admitted.jar)
                if selection.otherSites > 0 {
                    Console.err("sessionkeeper: left out \(selection.otherSites) cookie(s) of other sites")
                }
            } else {
                let file = file ?? "-"
                source = JarFiles.displayName(file)
                let bytes = try JarFiles.readBytes(file) ?? []
                let text = try JarFiles.text(of: bytes, name: JarFiles.displayName(file))
                let chosen = try format.map { try JarOptions.parseFormat($0, option: "--format") }
                (decisions, jar) = try CookieImport.admit(text, bytes: bytes, format: chosen, file: file, site: definition, now: now)
            }

            for case let .rejected(name, reason) in decisions {
                Console.err("sessionkeeper: refused " + (name.map { "cookie '\($0)'" } ?? "a cookie") + ": \(reason)")
            }
            let kept = SessionRecord.persistable(
                jar.allCookies, keepSessionCookies: definition.cookies.persistSessionCookies, now: now)
            guard !kept.isEmpty else {
                throw CLIFailure.failed(
                    "no cookie of \(source) was accepted for site '\(definition.name)' (base_url "
                        + "\(definition.baseURL.absoluteString)); the stored session was left as it was")
            }
            let essentials = definition.cookies.essential.compactMap { entry in kept.first { entry.matches($0, baseURL: definition.baseURL) } }
            for entry in definition.cookies.essential where !kept.contains(where: { entry.matches($0, baseURL: definition.baseURL) }) {
                Console.err("sessionkeeper: warning: the essential cookie '\(entry)' is not among the imported cookies")
            }
            let record = SessionRecord(
                cookies: kept, lastLogin: now, expiresAt: essentials.compactMap(\.expires).min(),
                userAgent: userAgent ?? definition.http.userAgent)
            try await Self.store(record, site: definition.name, config: daemonConfig)
            Console.out(
                "imported \(kept.count) cookie(s) for \(definition.name) (\(Cookie.labels(kept).joined(separator: ", ")))"
                    + (record.expiresAt.map { "; the session expires at \(CookieTime.rfc3339($0))" } ?? ""))
        }
    }

    /// The site's cookies in the browser profile `text` names (`firefox[:PROFILE]`, `chromium[:PROFILE]`).
    private static func readBrowser(_ text: String, site: SiteDefinition, now: Date) async throws -> BrowserCookieSelection {
        let environment = ProcessInfo.processInfo.environment
        do {
            let source = try BrowserSource(parsing: text)
            let reader = BrowserCookieReader(
                home: environment["HOME"] ?? NSHomeDirectory(), environment: environment,
                currentDirectory: FileManager.default.currentDirectoryPath)
            return try await reader.read(source, baseURL: site.baseURL, now: now)
        } catch {
            throw CLIFailure.usage("--from-browser \(text): \(error)")
        }
    }

    /// Stores the session where config.yaml keeps them; in fleet mode every keeper's change feed serves it at once.
    private static func store(_ record: SessionRecord, site: String, config: DaemonConfig) async throws {
        try await StoreAccess.with(config, create: true) { store in
            do {
                try await store.sessions.save(record, site: site)
            } catch {
                throw CLIFailure.failed("\(error)")
            }
        }
    }
}

/// Reading a cookie file (or a browser profile's cookies) into a site's jar for `import`.
enum CookieImport {
    /// The site's jar, whose policy keeps out cookies of other sites in a browser's export or profile,
    /// whatever the site's accept policy otherwise allows.
    static func importJar(for site: SiteDefinition, now: Date) -> CookieStorage {
        let storage = SiteJar.makeStorage(for: site, clock: { now })
        if storage.acceptPolicy == .always { storage.acceptPolicy = .mainDocumentDomain }
        return storage
    }

    /// Cookies read from a browser profile put through `site`'s jar, as cookies made elsewhere.
    static func admit(_ cookies: [Cookie], site: SiteDefinition, now: Date) -> (decisions: [CookieDecision], jar: CookieStorage) {
        let storage = importJar(for: site, now: now)
        return (storage.setCookies(cookies, mainDocumentURL: site.baseURL), storage)
    }

    /// The cookies of `text` put through `site`'s jar: what became of each, and the jar with those kept (a
    /// cookie named twice in the file is the later one there).
    static func admit(
        _ text: String, bytes: [UInt8], format: CookieFormat?, file: String, site: SiteDefinition, now: Date
    ) throws -> (decisions: [CookieDecision], jar: CookieStorage) {
        let storage = importJar(for: site, now: now)
        let base = site.baseURL
        let isHeaderDump = text.drop { $0.isWhitespace }.hasPrefix("HTTP/")
        switch format ?? (isHeaderDump ? .setCookie : CookieFormat.guess(from: text)) {
        case nil:
            throw CLIFailure.usage(
                "\(JarFiles.displayName(file)): cannot tell the cookie format; give --format (netscape, json, playwright, set-cookie or header)")
        case .setCookie?:
            // Read as a response from base_url: the RFC 6265 rules of that origin apply (domain, path, prefixes).
            var decisions: [CookieDecision] = []
            var values: [String] = []
            for value in JarStoreInput.values(fromInput: bytes).values {
                switch value {
                case .success(let text): values.append(text)
                case .failure(let failure): decisions.append(.rejected(name: nil, reason: failure.description))
                }
            }
            return (decisions + storage.setCookies(fromHeaders: values, for: base, mainDocumentURL: base), storage)
        case .header?:
            var value = Substring(text.trimmingCharacters(in: .whitespacesAndNewlines))
            if value.lowercased().hasPrefix("cookie:") { value = value.dropFirst("cookie:".count) }
            let cookies = try JarFiles.decode(String(value), as: .header, path: file, url: base, now: now)
            return (storage.setCookies(cookies, mainDocumentURL: base), storage)
        case let fileFormat?:
            let cookies = try JarFiles.decode(text, as: fileFormat, path: file, now: now)
            return (storage.setCookies(cookies, mainDocumentURL: base), storage)
        }
    }
}
