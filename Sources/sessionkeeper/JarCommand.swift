import ArgumentParser

/// `sessionkeeper jar`: the offline cookie-jar tool (SPEC section 9). Each subcommand loads a jar file,
/// applies the CookieJar module's rules, and prints or writes the result.
struct JarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jar",
        abstract: "Work with cookie jar files offline (.json lossless, anything else Netscape cookies.txt).",
        subcommands: [JarStoreCommand.self, JarHeaderCommand.self, JarListCommand.self, JarConvertCommand.self]
    )
}
