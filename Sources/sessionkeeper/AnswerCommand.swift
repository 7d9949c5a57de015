import ArgumentParser
import Foundation
import JSON
import Platform
import SocketRoutes

/// `sessionkeeper answer SITE [NAME]` (SPEC section 12): gives the running daemon a person's answer to the
/// `prompt` step a site's login waits on.
struct AnswerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "Answer the prompt a site's login waits on (a code sent by text message, an approval).",
        discussion: """
            Reads the answer from standard input: on a terminal it asks without echo; otherwise it reads \
            everything (one trailing newline dropped), so `echo 123456 | sessionkeeper answer SITE` works. \
            POST /v1/sites/SITE/answer; only a manager of the daemon (its uid, root, socket.allow_uids) may \
            answer. With NAME, only the prompt of that name is answered. The answer is never printed or logged. \
            Exit status: 0 answered; 1 no prompt (of that name) waits, or the daemon refused; 2 usage or an \
            unknown site; 3 no daemon runs.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Argument(help: "The prompt's name (its `name:`); any waiting prompt of the site when left out.")
    var name: String?

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            let daemon = try socket.daemonSocket()
            let label = name.map { "\(site) (\($0))" } ?? site
            let bytes: [UInt8]
            do {
                bytes = try Terminal.readSecret(prompt: "Answer for \(label): ")
            } catch {
                throw CLIFailure.failed("cannot read the answer from standard input: \(error)")
            }
            guard !bytes.isEmpty else { throw CLIFailure.usage("no answer on standard input") }
            let client = DaemonClient(daemon)
            let answer: JSONValue
            do throws(DaemonClientError) {
                answer = try client.json(.answer, site: site, query: [(.name, name)], body: bytes)
            } catch {
                throw CLIFailure(error, site: site)
            }
            let answered = answer["prompt"]?.plainText ?? name ?? "the prompt"
            Console.out("answered '\(answered)' of \(site)")
        }
    }
}
