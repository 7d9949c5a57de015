import JSON

/// Chromium's profiles on Linux: folders of its user data folder (`$XDG_CONFIG_HOME/chromium`, by default
/// `~/.config/chromium`): `Default`, `Profile 1`, … Their names as the browser shows them are in the user data
/// folder's `Local State` (JSON: `profile.info_cache.FOLDER.name`).
struct ChromiumProfiles: Sendable, Hashable {
    /// A profile's folder name and the name the browser shows for it.
    struct NamedProfile: Sendable, Hashable {
        var folder: String
        var name: String
    }

    /// The profile used when none is named.
    static let defaultFolderName = "Default"

    /// The user data folder.
    var root: String
    /// The profiles `Local State` names (none when it has no list).
    var names: [NamedProfile]

    var localStatePath: String { ProfileFiles.join(root, "Local State") }

    static func root(home: String, environment: [String: String]) -> String {
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ProfileFiles.join(home, ".config")
        return ProfileFiles.join(configHome, "chromium")
    }

    static func load(home: String, environment: [String: String]) throws(BrowserCookieError) -> ChromiumProfiles {
        let root = root(home: home, environment: environment)
        guard ProfileFiles.isFolder(root) else { throw .noProfiles(.chromium, looked: [root]) }
        let statePath = ProfileFiles.join(root, "Local State")
        guard ProfileFiles.isFile(statePath) else { return ChromiumProfiles(root: root, names: []) }
        return ChromiumProfiles(root: root, localState: try ProfileFiles.text(statePath))
    }

    init(root: String, names: [NamedProfile]) {
        self.root = root
        self.names = names
    }

    /// `Local State` as Chromium writes it; a file that does not parse lists no names (folders still work).
    init(root: String, localState: String) {
        var names: [NamedProfile] = []
        if let state = try? JSONValue.parse(localState), case .object(let cache)? = state["profile"]?["info_cache"] {
            for (folder, info) in cache {
                if case .string(let name)? = info["name"] { names.append(NamedProfile(folder: folder, name: name)) }
            }
        }
        self.init(root: root, names: names)
    }

    /// The folder of the profile `requested` names (a folder name such as `Profile 1`, or a name `Local
    /// State` gives), or of `Default` when it is nil.
    func folder(for requested: String?) throws(BrowserCookieError) -> String {
        guard let requested else { return ProfileFiles.join(root, Self.defaultFolderName) }
        let direct = ProfileFiles.join(root, requested)
        if ProfileFiles.isFolder(direct) { return direct }
        if let match = names.first(where: { $0.name == requested }) ?? names.first(where: { $0.name.lowercased() == requested.lowercased() }) {
            return ProfileFiles.join(root, match.folder)
        }
        let known = names.map { $0.name == $0.folder ? $0.name : "\($0.name) (\($0.folder))" }
        throw .profileNotFound(.chromium, name: requested, known: known, listedIn: localStatePath)
    }

}
