/// Why a browser's cookies could not be read. Each case names the browser, the profile or the file, and says
/// what to do; none ever holds a cookie value or the keyring's password.
public enum BrowserCookieError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `--from-browser` named something other than `firefox` or `chromium`.
    case unknownBrowser(String)
    /// The browser's folder of profiles (or its list of profiles) is not there.
    case noProfiles(Browser, looked: [String])
    /// No profile has this name or folder name; `known` lists the profiles there are.
    case profileNotFound(Browser, name: String, known: [String], listedIn: String)
    /// Several installations of the browser name different default profiles.
    case ambiguousDefault(Browser, candidates: [String], listedIn: String)
    /// No profile is marked as the default one and there is more than one.
    case noDefaultProfile(Browser, known: [String], listedIn: String)
    /// The profile's folder does not exist or is not a folder.
    case notAFolder(Browser, path: String)
    /// The profile's folder holds no cookie database.
    case noCookieDatabase(Browser, profile: String, looked: [String])
    /// A file of the profile could not be read (its reason in the user's words).
    case unreadable(path: String, reason: String)
    /// SQLite refused the (copied) database: locked, damaged, not a database.
    case database(path: String, message: String, hint: String)
    /// The database has no table or column the reader needs: a browser version it does not know.
    case unexpectedSchema(path: String, missing: String)
    /// Chromium's `v11` values need the desktop keyring's password, and no keyring gave it.
    case keyringUnavailable(reason: String)
    /// The private folder for the copy could not be made.
    case temporaryFolder(reason: String)

    public var description: String {
        switch self {
        case .unknownBrowser(let name):
            return "unknown browser '\(name)' (expected firefox[:PROFILE] or chromium[:PROFILE])"
        case let .noProfiles(browser, looked):
            return "no \(browser) profiles found (looked for \(looked.joined(separator: " and "))); "
                + "give the profile's folder: \(browser.rawValue):/path/to/profile"
        case let .profileNotFound(browser, name, known, listedIn):
            return "no \(browser) profile named '\(name)' in \(listedIn)"
                + (known.isEmpty ? "" : " (profiles: \(known.joined(separator: ", ")))")
        case let .ambiguousDefault(browser, candidates, listedIn):
            return "\(listedIn) names a different default \(browser) profile for each installation "
                + "(\(candidates.joined(separator: ", "))); name one: \(browser.rawValue):PROFILE"
        case let .noDefaultProfile(browser, known, listedIn):
            return "\(listedIn) marks no \(browser) profile as the default (profiles: \(known.joined(separator: ", "))); "
                + "name one: \(browser.rawValue):PROFILE"
        case let .notAFolder(browser, path):
            return "the \(browser) profile folder \(path) does not exist or is not a folder"
        case let .noCookieDatabase(browser, profile, looked):
            return "the \(browser) profile \(profile) has no cookie database (looked for \(looked.joined(separator: " and "))); "
                + "has the browser run with this profile?"
        case let .unreadable(path, reason):
            return "cannot read \(path): \(reason)"
        case let .database(path, message, hint):
            return "cannot read the cookie database \(path): \(message)" + (hint.isEmpty ? "" : "; \(hint)")
        case let .unexpectedSchema(path, missing):
            return "the cookie database \(path) has no \(missing); it is not one this version of sessionkeeper can read"
        case .keyringUnavailable(let reason):
            return "the profile's cookies are encrypted with a key kept in the desktop keyring (Chromium's v11), and "
                + "\(reason); unlock the keyring in the desktop session and try again, or export the cookies from the "
                + "browser and run `sessionkeeper import SITE FILE`"
        case .temporaryFolder(let reason):
            return "cannot make a private folder for the copy of the cookie database: \(reason)"
        }
    }
}
