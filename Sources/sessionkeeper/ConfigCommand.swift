import ArgumentParser
import JSON
import Platform
import SiteConfig

/// `sessionkeeper config [--json]`: where the CLI finds the config file, the daemon's socket and the daemon's user,
/// resolved as every client command resolves them (SPEC section 9), so that a client in another language (the
/// Python client) asks instead of reading config.yaml itself.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the config file, the daemon's socket and the daemon's user as the CLI finds them.",
        discussion: """
            Reads of config.yaml only state_dir and socket. Prints config, socket, state_dir and daemon_uid (the owner \
            of state_dir, whose server on the socket clients believe; none when state_dir does not exist), one a line, \
            or with --json one JSON object with those members (daemon_uid null when unknown). Exit status: 0 printed; \
            2 no config file found, or it cannot be read.
            """
    )

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            let loader = ConfigurationLoader()
            let file = try config.locate(loader)
            let lookup = try config.loadSocketLookup(loader)
            let daemonUID = (try? Syscall.stat(lookup.stateDirectory))?.ownerUID
            if json {
                let members: [(key: String, value: JSONValue)] = [
                    ("config", .string(file)), ("socket", .string(lookup.socket.path)), ("state_dir", .string(lookup.stateDirectory)),
                    ("daemon_uid", daemonUID.map { .number(String($0)) } ?? .null),
                ]
                Console.out(JSONWriter.write(.object(members)))
            } else {
                Console.out("config: \(file)\nsocket: \(lookup.socket.path)\nstate_dir: \(lookup.stateDirectory)")
                Console.out("daemon_uid: \(daemonUID.map(String.init) ?? "none")")
            }
        }
    }
}
