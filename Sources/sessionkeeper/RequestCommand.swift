import ArgumentParser
import Foundation
import Platform
import SocketClient
import SocketRoutes

/// `sessionkeeper request SITE PATH [-X M] [-H H]... [-d D | --data-binary @FILE|@-] [-i] [-o FILE]` (SPEC
/// sections 9 and 10): one request to a site through the daemon's egress route, which attaches the session; the
/// CLI never sees a cookie. Both bodies stream: neither is held whole.
struct RequestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send a request to a site through the daemon, with its session (the client never holds a cookie).",
        discussion: """
            Sends METHOD PATH to the site's base_url through the running daemon (ANY \
            /v1/sites/SITE/proxy/PATH): the daemon attaches the session's cookies and User-Agent, keeps the \
            cookies the site sets, and logs in again when the site's egress.logged_out rule says the session \
            is gone. PATH is the site's own path with an optional query, as it goes on the wire \
            (percent-encoded). The options follow curl's: -X, -H (repeatable; a Cookie, Host or hop-by-hop \
            field is dropped by the daemon), -d/--data and --data-binary (TEXT, @FILE, or @- for standard \
            input; sent as given, also -d's file; a body makes the default method POST and, without a \
            Content-Type, -d sends application/x-www-form-urlencoded), -i (print the answer's head first), \
            -o FILE (write the body there). The body is written as it arrives. Exit status: 0 the final \
            answer's status is below 400; 1 it is 400 or more (the body is still written), or the exchange \
            failed; 2 usage; 3 no daemon answers.
            """
    )

    @Argument(help: "The site's name.")
    var site: String

    @Argument(help: ArgumentHelp("The site's path, with an optional query (e.g. /api/me?all=1).", valueName: "path"))
    var path: String

    @Option(name: [.customShort("X"), .customLong("request")], help: ArgumentHelp("The method (default GET, POST with a body).", valueName: "method"))
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("A request header field, 'Name: value'.", valueName: "field"))
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: ArgumentHelp("The body: TEXT, @FILE or @- (standard input).", valueName: "data"))
    var data: String?

    @Option(name: .customLong("data-binary"), help: ArgumentHelp("The body, as --data, never given a Content-Type.", valueName: "data"))
    var dataBinary: String?

    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the answer's status line and header fields before its body.")
    var include = false

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write the body to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .long, help: ArgumentHelp("The longest the daemon may stay silent (default 60s; a login may come first).", valueName: "duration"))
    var timeout: String = "60s"

    @OptionGroup var socket: SocketOptions

    func run() throws {
        try reportingFailuresOnThisThread {
            guard data == nil || dataBinary == nil else { throw CLIFailure.usage("give --data or --data-binary, not both") }
            let silence = try CookieCommand.duration(timeout, option: "--timeout")
            let target = try Self.target(site: site, path: path)
            var fields = try headers.map(Self.field)
            let given = data ?? dataBinary
            let body = try given.map(Self.body) ?? .none
            if data != nil, !fields.contains(where: { $0.name.lowercased() == "content-type" }) {
                fields.append(.init(name: "Content-Type", value: "application/x-www-form-urlencoded"))
            }
            let verb = method ?? (given == nil ? "GET" : "POST")
            guard !verb.isEmpty, verb.allSatisfy({ $0.isLetter || $0 == "-" }) else { throw CLIFailure.usage("-X: '\(verb)' is not a method") }
            let sink = try output.map(OutputFile.create) ?? OutputFile.standardOutput
            defer { sink.close() }
            let daemon = try socket.daemonSocket()
            let client = UnixSocketHTTPClient(socketPath: daemon.path, timeout: silence, trust: daemon.trust)
            let head: HTTPResponseHead
            do {
                head = try client.stream(verb, target, headers: fields, body: body, onHead: { head in
                    if include { try sink.write(Array(Self.headText(head).utf8)) }
                }, onBody: { part in try sink.write(part) })
            } catch let error as UnixSocketHTTPError {
                if case .notReachable = error { throw CLIFailure(message: CLIFailure.unreachableMessage(error), code: Exit.daemonUnreachable) }
                if case .untrustedServer = error { throw CLIFailure.usage(error.description) }
                throw CLIFailure.failed("the exchange with the daemon failed: \(error)")
            }
            if head.status >= 400 {
                throw CLIFailure.failed("site '\(site)' answered \(head.status)\(head.value(of: "SessionKeeper-Session").map { " (session: \($0))" } ?? "")")
            }
        }
    }

    /// `/v1/sites/SITE/proxy` + PATH; a path must start with `/` (one is added otherwise) and hold no space or
    /// control character, which no request line may.
    static func target(site: String, path: String) throws -> String {
        let rest = path.hasPrefix("/") ? path : "/" + path
        guard !rest.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }) else {
            throw CLIFailure.usage("PATH '\(path)' holds a space or a control character: percent-encode it (%20)")
        }
        return SocketRoute.proxy.target(site: site, rest: rest)
    }

    /// `Name: value` as a field.
    static func field(_ text: String) throws -> HTTPResponseHead.Field {
        guard let colon = text.firstIndex(of: ":") else { throw CLIFailure.usage("-H '\(text)': expected 'Name: value'") }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(where: { $0.isWhitespace }),
              !value.contains(where: { $0 == "\r" || $0 == "\n" })
        else { throw CLIFailure.usage("-H: '\(name)' is not a valid header field") }
        return .init(name: name, value: value)
    }

    /// The body of `--data`/`--data-binary`: text as given, `@FILE` read part by part (sent with its size when
    /// it is a regular file, chunked otherwise), `@-` standard input, chunked.
    static func body(_ given: String) throws -> StreamedRequestBody {
        guard given.hasPrefix("@") else { return .bytes(Array(given.utf8)) }
        let path = String(given.dropFirst())
        let fd: Int32
        let length: Int?
        do throws(SystemError) {
            if path == "-" {
                fd = STDIN_FILENO
                length = nil
            } else {
                fd = try Syscall.open(path, O_RDONLY | O_CLOEXEC)
                let status = try Syscall.fstat(fd, path: path)
                length = status.isRegularFile ? Int(status.size) : nil
            }
        } catch {
            throw CLIFailure.usage("cannot read the body from \(path == "-" ? "standard input" : path): \(error.reason)")
        }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        return .reader(length: length) {
            do throws(SystemError) {
                let count = try Syscall.readSome(fd, into: &buffer, path: path == "-" ? nil : path)
                return Array(buffer[0..<count])
            } catch {
                throw CLIFailure.failed("cannot read the body from \(path == "-" ? "standard input" : path): \(error.reason)")
            }
        }
    }

    static func headText(_ head: HTTPResponseHead) -> String {
        var text = "HTTP/1.1 \(head.status)\r\n"
        for field in head.fields { text += "\(field.name): \(field.value)\r\n" }
        return text + "\r\n"
    }
}

/// Where the body goes: standard output, or a file created (or truncated) for it, written as it arrives.
private struct OutputFile {
    let fd: Int32
    let path: String?

    static let standardOutput = OutputFile(fd: STDOUT_FILENO, path: nil)

    static func create(_ path: String) throws -> OutputFile {
        do throws(SystemError) {
            return OutputFile(fd: try Syscall.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644), path: path)
        } catch {
            throw CLIFailure.failed("cannot write \(path): \(error.reason)")
        }
    }

    func write(_ bytes: [UInt8]) throws {
        // withUnsafeBytes rethrows untyped errors only, so the failure comes out as a value.
        let failure: SystemError? = bytes.withUnsafeBytes { buffer in
            do throws(SystemError) {
                try Syscall.writeAll(fd, buffer, path: path)
                return nil
            } catch {
                return error
            }
        }
        guard let failure else { return }
        if path == nil, failure.errno == EPIPE { Foundation.exit(Exit.failed) }
        throw CLIFailure.failed("cannot write \(path ?? "standard output"): \(failure.reason)")
    }

    func close() {
        if path != nil { Syscall.close(fd) }
    }
}
