/// The browsers whose cookie stores `sessionkeeper import --from-browser` reads on Linux.
public enum Browser: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Firefox: `cookies.sqlite` in a profile of `~/.mozilla/firefox` (plain text values).
    case firefox
    /// Chromium: `Cookies` in a profile of `~/.config/chromium` (values encrypted, `v10` or `v11`).
    case chromium

    public var description: String {
        switch self {
        case .firefox: "Firefox"
        case .chromium: "Chromium"
        }
    }
}

/// What `--from-browser` names: a browser and, optionally, one of its profiles (`firefox`, `firefox:work`,
/// `chromium:/path/to/Profile 1`).
public struct BrowserSource: Sendable, Hashable, CustomStringConvertible {
    public var browser: Browser
    /// A profile's folder (a path: it holds a `/`) or a profile's name; nil for the default profile.
    public var profile: String?

    public init(browser: Browser, profile: String? = nil) {
        self.browser = browser
        self.profile = profile
    }

    /// Reads `BROWSER[:PROFILE]`.
    public init(parsing text: String) throws(BrowserCookieError) {
        let name: Substring
        var profile: String?
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            profile = String(text[text.index(after: colon)...])
            if profile?.isEmpty == true { profile = nil }
        } else {
            name = Substring(text)
        }
        guard let browser = Browser(rawValue: name.lowercased()) else {
            throw .unknownBrowser(String(name))
        }
        self.init(browser: browser, profile: profile)
    }

    /// Whether ``profile`` names a folder rather than a profile's name.
    var profileIsFolder: Bool { profile?.contains("/") ?? false }

    public var description: String { browser.rawValue + (profile.map { ":" + $0 } ?? "") }
}
