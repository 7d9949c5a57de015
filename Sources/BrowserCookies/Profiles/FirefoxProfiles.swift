/// Firefox's profiles on Linux: `profiles.ini` in `~/.mozilla/firefox` (or, for newer installations,
/// `$XDG_CONFIG_HOME/mozilla/firefox`) lists them as `[ProfileN]` sections (`Name`, `Path`, `IsRelative`,
/// `Default`); the default profile of each installation is in `installs.ini` and in `[InstallHASH]` sections
/// of `profiles.ini` (`Default=PATH`), which take precedence over the older `Default=1` mark.
struct FirefoxProfiles: Sendable, Hashable {
    struct Profile: Sendable, Hashable {
        var name: String
        /// Absolute path of the profile's folder.
        var folder: String
        /// `Default=1` in its `[ProfileN]` section (the choice of Firefox versions before 67).
        var markedDefault: Bool

        var folderName: String { folder.split(separator: "/").last.map(String.init) ?? folder }
        var label: String { name == folderName ? name : "\(name) (\(folderName))" }
    }

    /// The folder holding `profiles.ini`.
    var root: String
    var profiles: [Profile]
    /// Absolute folders the installations name as their default, in file order, without repeats.
    var installDefaults: [String]

    var listPath: String { ProfileFiles.join(root, "profiles.ini") }

    /// The folders Firefox keeps its profiles in, in the order they are tried.
    static func roots(home: String, environment: [String: String]) -> [String] {
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ProfileFiles.join(home, ".config")
        return [ProfileFiles.join(home, ".mozilla/firefox"), ProfileFiles.join(configHome, "mozilla/firefox")]
    }

    /// Reads the first root that has a `profiles.ini`.
    static func load(home: String, environment: [String: String]) throws(BrowserCookieError) -> FirefoxProfiles {
        let roots = roots(home: home, environment: environment)
        guard let root = roots.first(where: { ProfileFiles.isFile(ProfileFiles.join($0, "profiles.ini")) }) else {
            throw .noProfiles(.firefox, looked: roots.map { ProfileFiles.join($0, "profiles.ini") })
        }
        let profilesINI = INIFile(text: try ProfileFiles.text(ProfileFiles.join(root, "profiles.ini")))
        let installsPath = ProfileFiles.join(root, "installs.ini")
        let installsINI = ProfileFiles.isFile(installsPath) ? INIFile(text: try ProfileFiles.text(installsPath)) : INIFile(text: "")
        return FirefoxProfiles(root: root, profilesINI: profilesINI, installsINI: installsINI)
    }

    init(root: String, profilesINI: INIFile, installsINI: INIFile) {
        self.root = root
        func folder(_ path: String, relative: Bool) -> String {
            relative && !path.hasPrefix("/") ? ProfileFiles.join(root, path) : path
        }
        profiles = profilesINI.sections.compactMap { section in
            guard section.name.hasPrefix("Profile"), let path = section.values["Path"], !path.isEmpty else { return nil }
            let relative = section.values["IsRelative"] != "0"
            let location = folder(path, relative: relative)
            return Profile(
                name: section.values["Name"] ?? location, folder: location, markedDefault: section.values["Default"] == "1")
        }
        var defaults: [String] = []
        let installSections = installsINI.sections + profilesINI.sections.filter { $0.name.hasPrefix("Install") }
        for section in installSections {
            guard let path = section.values["Default"], !path.isEmpty else { continue }
            let location = folder(path, relative: true)
            if !defaults.contains(location) { defaults.append(location) }
        }
        installDefaults = defaults
    }

    /// The folder of the profile `requested` names (a name, or a folder's name under the root), or of the
    /// default profile when it is nil.
    func folder(for requested: String?) throws(BrowserCookieError) -> String {
        let known = profiles.map(\.label)
        if let requested {
            if let match = profiles.first(where: { $0.name == requested })
                ?? profiles.first(where: { $0.folderName == requested })
                ?? profiles.first(where: { $0.name.lowercased() == requested.lowercased() }) {
                return match.folder
            }
            let unlisted = ProfileFiles.join(root, requested)
            if ProfileFiles.isFolder(unlisted) { return unlisted }
            throw .profileNotFound(.firefox, name: requested, known: known, listedIn: listPath)
        }
        switch installDefaults.count {
        case 1: return installDefaults[0]
        case 0: break
        default:
            let names = installDefaults.map { folder in profiles.first { $0.folder == folder }?.label ?? folder }
            throw .ambiguousDefault(.firefox, candidates: names, listedIn: listPath)
        }
        if let marked = profiles.first(where: \.markedDefault) { return marked.folder }
        if profiles.count == 1 { return profiles[0].folder }
        if profiles.isEmpty { throw .noProfiles(.firefox, looked: [listPath]) }
        throw .noDefaultProfile(.firefox, known: known, listedIn: listPath)
    }
}
