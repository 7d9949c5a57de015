import CookieJar
import Foundation
import TestSupport
import Testing

/// Issue 10, the jar's part, run through the built `sessionkeeper` as a user runs it: jar files are never
/// clobbered (symbolic links, devices, folders, FIFOs, files that are not jars, concurrent writers), cookies
/// are never dropped in silence, and `jar store` reads standard input. Each case checks the exit status, the
/// message, and that no file changed that should not have.
@Suite("jar files under hostile input, run as a process")
struct JarFileSafetyTests {
    static let now = "2026-01-01T00:00:00Z"
    static let secret = "S3CRET-cookie-value"

    /// `sessionkeeper ARGS` with `input` on standard input (nil: /dev/null).
    static func run(_ arguments: [String], input: Data? = nil) async throws -> CLIRunner.Output {
        let binary = try #require(CLIRunner.executable, "the sessionkeeper executable was not built beside the tests")
        return CLIRunner.Output(try await runProgramInSharedSlot(binary.path, arguments, input: input))
    }

    static func store(_ jar: String, _ values: [String], url: String = "https://example.com/", verbose: Bool = false, input: Data? = nil) async throws -> CLIRunner.Output {
        try await run(["jar", "store", jar, "--url", url, "--now", now] + (verbose ? ["--verbose"] : []) + (values.isEmpty ? [] : ["--"] + values), input: input)
    }

    static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    static func netscape(_ path: String) throws -> [Cookie] {
        try CookieCodec.decode(String(contentsOfFile: path, encoding: .utf8), as: .netscape, url: nil, now: Date())
    }

    /// One line on stderr starting `sessionkeeper: `, naming the file, with no value and no Swift or
    /// temporary-file jargon.
    static func expectOneMessage(_ result: CLIRunner.Output, status: Int32, contains fragments: [String]) {
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("sessionkeeper: "))
        for fragment in fragments { #expect(result.stderr.contains(fragment), "stderr: \(result.stderr)") }
        for jargon in ["NSCocoaErrorDomain", ".tmp-", "Error Domain", "errno", secret] {
            #expect(!result.stderr.contains(jargon), "stderr: \(result.stderr)")
        }
    }

    // MARK: Targets that are not regular files

    @Test("devices are refused as jar files to write and stay devices", arguments: ["/dev/null", "/dev/zero"])
    func deviceTarget(_ device: String) async throws {
        let result = try await Self.store(device, ["a=\(Self.secret)"])
        Self.expectOneMessage(result, status: 2, contains: ["\(device) is a character device, not a regular file", "- for standard output"])
        let status = try fileKind(device)
        #expect(status == "character device")
    }

    @Test("a directory, a FIFO and a symbolic link to a device are refused without waiting or changing them")
    func otherTargets() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let directory = folder.path("dir")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        Self.expectOneMessage(try await Self.store(directory, ["a=1"]), status: 2, contains: ["\(directory) is a directory, not a regular file"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)

        let fifo = folder.path("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        Self.expectOneMessage(try await Self.store(fifo, ["a=1"]), status: 2, contains: ["\(fifo) is a FIFO (named pipe), not a regular file"])
        #expect(try fileKind(fifo) == "fifo")

        let toNull = folder.path("to-null")
        try FileManager.default.createSymbolicLink(atPath: toNull, withDestinationPath: "/dev/null")
        Self.expectOneMessage(try await Self.store(toNull, ["a=1"]), status: 2, contains: ["\(toNull) (which leads to /dev/null) is a character device"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: toNull) == "/dev/null")

        let toDirectory = folder.path("to-dir")
        try FileManager.default.createSymbolicLink(atPath: toDirectory, withDestinationPath: directory)
        Self.expectOneMessage(try await Self.store(toDirectory, ["a=1"]), status: 2, contains: ["is a directory, not a regular file"])

        // jar convert's output and login's --jar take the same path.
        let source = folder.path("in.txt")
        #expect(try await Self.store(source, ["a=1"]).status == 0)
        Self.expectOneMessage(try await Self.run(["jar", "convert", source, "/dev/null"]), status: 2, contains: ["/dev/null is a character device"])
        Self.expectOneMessage(try await Self.run(["jar", "convert", source, directory]), status: 2, contains: ["is a directory"])
    }

    @Test("symbolic link loops are refused with the reason", arguments: ["self", "pair"])
    func symlinkLoops(_ shape: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let a = folder.path("a"), b = folder.path("b")
        if shape == "self" {
            try FileManager.default.createSymbolicLink(atPath: a, withDestinationPath: a)
        } else {
            try FileManager.default.createSymbolicLink(atPath: a, withDestinationPath: b)
            try FileManager.default.createSymbolicLink(atPath: b, withDestinationPath: a)
        }
        Self.expectOneMessage(try await Self.store(a, ["a=1"]), status: 2, contains: ["\(a): its symbolic links loop"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == (shape == "self" ? ["a"] : ["a", "b"]))
    }

    @Test("writes go through a symbolic link (the link stays), also a dangling one and a relative one")
    func throughSymlinks() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let real = folder.path("real.txt"), link = folder.path("link.txt")
        #expect(try await Self.store(real, ["old=1"]).status == 0)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "real.txt")
        let result = try await Self.store(link, ["new=2"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "real.txt")
        #expect(try Self.netscape(real).map(\.name) == ["old", "new"])

        let dangling = folder.path("dangling.txt")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: folder.path("created.txt"))
        #expect(try await Self.store(dangling, ["a=1"]).status == 0)
        #expect(try Self.netscape(folder.path("created.txt")).map(\.name) == ["a"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dangling) == folder.path("created.txt"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == ["created.txt", "dangling.txt", "link.txt", "real.txt"])
    }

    @Test("a missing folder is bad input; nothing is created")
    func missingFolder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("nope/jar.txt")
        Self.expectOneMessage(try await Self.store(jar, ["a=1"]), status: 2, contains: ["cannot write \(jar): the folder \(folder.path("nope")) does not exist"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
        let underFile = folder.path("file.txt")
        try "x".write(toFile: underFile, atomically: false, encoding: .utf8)
        Self.expectOneMessage(try await Self.store(underFile + "/jar.txt", ["a=1"]), status: 2, contains: ["cannot write \(underFile)/jar.txt"])
        #expect(Self.bytes(underFile) == Data("x".utf8))
    }

    @Test("a read-only folder: exit 1, permission denied on the folder, no temporary file left",
          .enabled(if: getuid() != 0, "root may write anywhere"))
    func readOnlyFolder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let locked = folder.path("ro")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        #expect(chmod(locked, 0o500) == 0)
        defer { chmod(locked, 0o700) }
        Self.expectOneMessage(try await Self.store(locked + "/jar.txt", ["a=1"]), status: 1, contains: ["permission denied on the folder \(locked)"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: locked).isEmpty)
    }

    // MARK: Files that are not jars

    @Test("a file that is not a jar is never overwritten", arguments: [
        "name: demo\nbase_url: https://example.com\nlogin:\n  steps: []\n",
        "#!/bin/sh\necho hello\n",
        "KEY=value\nOTHER=2\n",
        "Set-Cookie: a=1; Domain=example.com\n",
        "{\"not\": \"a jar\"}\n",
    ])
    func notAJar(_ content: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let file = folder.path("site.yaml")
        try content.write(toFile: file, atomically: false, encoding: .utf8)
        Self.expectOneMessage(try await Self.store(file, ["a=\(Self.secret)"]), status: 2, contains: [file, "not overwritten"])
        #expect(Self.bytes(file) == Data(content.utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["site.yaml"])
    }

    @Test("jar convert refuses to overwrite a file that is not a cookie file")
    func convertNotAJar() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let source = folder.path("in.txt"), script = folder.path("run.sh")
        #expect(try await Self.store(source, ["a=1"]).status == 0)
        try "#!/bin/sh\nexit 0\n".write(toFile: script, atomically: false, encoding: .utf8)
        Self.expectOneMessage(try await Self.run(["jar", "convert", source, script]), status: 2, contains: [script, "not overwritten"])
        #expect(Self.bytes(script) == Data("#!/bin/sh\nexit 0\n".utf8))
        // A cookie file is replaced (that is convert's job).
        let out = folder.path("out.txt")
        try "Set-Cookie: x=1; Domain=example.com\n".write(toFile: out, atomically: false, encoding: .utf8)
        #expect(try await Self.run(["jar", "convert", source, out]).status == 0)
        #expect(try Self.netscape(out).map(\.name) == ["a"])
    }

    // MARK: Reading hostile files

    @Test("reading: /dev/null is an empty jar, /dev/zero and an oversized file stop at the limit, a folder is refused")
    func hostileReads() async throws {
        let empty = try await Self.run(["jar", "list", "/dev/null"])
        #expect(empty.status == 0 && empty.stderr.isEmpty)
        #expect(try CookieCodec.decode(empty.stdout, as: .netscape, url: nil, now: Date()).isEmpty)
        Self.expectOneMessage(try await Self.run(["jar", "list", "/dev/zero"]), status: 2, contains: ["cannot read /dev/zero: it holds more than 64 MiB"])
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let huge = folder.path("huge.txt")
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: huge))
        try handle.truncate(atOffset: 65 << 20)
        try handle.close()
        Self.expectOneMessage(try await Self.run(["jar", "header", huge, "--url", "https://example.com/"]), status: 2, contains: ["cannot read \(huge): it holds more than 64 MiB"])
        Self.expectOneMessage(try await Self.run(["jar", "list", folder.url.path]), status: 2, contains: ["it is a directory"])
        // A store into the oversized file is refused too, and the file keeps its size.
        Self.expectOneMessage(try await Self.store(huge, ["a=1"]), status: 2, contains: ["it holds more than 64 MiB"])
        #expect(try FileManager.default.attributesOfItem(atPath: huge)[.size] as? Int == 65 << 20)
    }

    @Test("a json jar with a line break in a value is refused, not turned into a broken cookies.txt")
    func controlCharacterInFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let json = folder.path("jar.json"), out = folder.path("out.txt")
        try """
        [{"name": "a", "value": "x\\n\(Self.secret)", "domain": "example.com", "host_only": true, "path": "/", "expires": null, \
        "secure": false, "http_only": false, "same_site": null, "created": "2026-01-01T00:00:00.000000Z", "last_access": "2026-01-01T00:00:00.000000Z"}]
        """.write(toFile: json, atomically: false, encoding: .utf8)
        Self.expectOneMessage(try await Self.run(["jar", "convert", json, out]), status: 2, contains: ["cookie 1: the value of cookie a holds a control character"])
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    // MARK: Encodings

    @Test("UTF-8 values round-trip byte for byte; other bytes are refused with the line, never rewritten")
    func encodings() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.txt")
        let stored = try await Self.store(jar, ["caf\u{E9}=cr\u{E8}me-\u{1F36A}"])
        #expect(stored.status == 0)
        #expect(try #require(Self.bytes(jar)).range(of: Data("cr\u{E8}me-\u{1F36A}".utf8)) != nil)
        let header = try await Self.run(["jar", "header", jar, "--url", "https://example.com/", "--now", Self.now])
        #expect(header.stdout == "caf\u{E9}=cr\u{E8}me-\u{1F36A}\n")

        // Standard input: the Latin-1 line is refused with a reason, the others are stored.
        let before = Self.bytes(jar)
        var input = Data("good=1\n".utf8)
        input.append(contentsOf: [0x62, 0x61, 0x64, 0x3D, 0xE9, 0x0A])
        let mixed = try await Self.store(jar, [], verbose: true, input: input)
        #expect(mixed.status == 0)
        #expect(mixed.stderr.contains("rejected Set-Cookie value 2: bytes that are not UTF-8"))
        #expect(try Self.netscape(jar).map(\.name) == ["caf\u{E9}", "good"])
        #expect(Self.bytes(jar) != before)

        // A cookies.txt with a Latin-1 byte: refused, naming the line.
        let latin = folder.path("latin.txt")
        var bytes = Data("# Netscape HTTP Cookie File\nexample.com\tFALSE\t/\tFALSE\t0\ta\t".utf8)
        bytes.append(0xE9)
        bytes.append(0x0A)
        try bytes.write(to: URL(fileURLWithPath: latin))
        Self.expectOneMessage(try await Self.run(["jar", "list", latin]), status: 2, contains: ["\(latin) line 2: bytes that are not UTF-8"])
        Self.expectOneMessage(try await Self.store(latin, ["b=1"]), status: 2, contains: ["line 2: bytes that are not UTF-8"])
        #expect(Self.bytes(latin) == bytes)
    }

    @Test("a value argument that is not UTF-8 is refused before the jar is touched")
    func nonUTF8Argument() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.txt")
        // Foundation's Process passes arguments as UTF-8, so the raw byte goes through a shell's printf.
        let binary = try #require(CLIRunner.executable).path
        let result = CLIRunner.Output(try await runProgramInSharedSlot(
            "/bin/sh", ["-c", "exec \"$0\" jar store \"$1\" --url https://example.com/ -- \"$(printf 'a=\\351')\"", binary, jar]))
        Self.expectOneMessage(result, status: 2, contains: ["argument 7 holds bytes that are not UTF-8"])
        #expect(!FileManager.default.fileExists(atPath: jar))
    }

    // MARK: Standard input

    @Test("a curl -D - header dump: only its Set-Cookie lines, any case, CRLF, folded, several responses")
    func headerDump() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.txt")
        let dump = """
        HTTP/1.1 302 Found\r
        Location: /next\r
        set-cookie: first=1; Path=/\r
        \r
        HTTP/2 200\r
        content-type: text/html\r
        SET-COOKIE: second=2;\r
         Secure\r
        Set-Cookie:third=3\r
        X-Note: Set-Cookie: not=this\r
        \r

        """
        let result = try await Self.store(jar, [], verbose: true, input: Data(dump.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let cookies = try Self.netscape(jar)
        #expect(cookies.map(\.name) == ["first", "second", "third"])
        #expect(cookies[1].secure)
        #expect(result.stderr.contains("ignored 3 other header line(s)"))
    }

    @Test("one value a line, with or without Set-Cookie:; an empty input leaves an empty jar")
    func valuesPerLine() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.json")
        let result = try await Self.store(jar, [], input: Data("a=1\r\n\nSet-Cookie: b=2; Max-Age=60\n  \nc=3".utf8))
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let cookies = try CookieCodec.decode(String(contentsOfFile: jar, encoding: .utf8), as: .json, url: nil, now: Date())
        #expect(cookies.map(\.name) == ["a", "b", "c"])
        let other = folder.path("empty.txt")
        #expect(try await Self.store(other, [], input: Data()).status == 0)
        #expect(try Self.netscape(other).isEmpty)
    }

    @Test("a 'Set-Cookie:' prefix in an argument is the field name, not part of the cookie name")
    func prefixArgument() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.txt")
        #expect(try await Self.store(jar, ["Set-Cookie: a=1", "set-cookie:b=2"]).status == 0)
        #expect(try Self.netscape(jar).map(\.name) == ["a", "b"])
    }

    @Test("'-' is standard output for store and standard input for list")
    func dash() async throws {
        let out = try await Self.store("-", ["a=\(Self.secret)"])
        #expect(out.status == 0 && out.stderr.isEmpty)
        #expect(out.stdout.contains("example.com\tFALSE\t/\tFALSE\t0\ta\t\(Self.secret)"))
        let listed = try await Self.run(["jar", "list", "-", "--format", "header"], input: Data(out.stdout.utf8))
        #expect(listed.stdout == "a=\(Self.secret)\n")
    }

    // MARK: Never dropped in silence

    @Test("storing one cookie into a 60-cookie cookies.txt keeps all 60")
    func sixtyCookies() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let lines = (0..<60).map { "example.com\tFALSE\t/\tFALSE\t0\tc\($0)\tv\n" }.joined()
        try ("# Netscape HTTP Cookie File\n" + lines).write(toFile: jar, atomically: false, encoding: .utf8)
        let result = try await Self.store(jar, ["new=1"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        #expect(try Self.netscape(jar).count == 61)
    }

    @Test("a domain full of file cookies refuses a new one: said without --verbose, explained with it")
    func fullDomain() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let lines = (0..<200).map { "example.com\tFALSE\t/\tFALSE\t0\tc\($0)\tv\n" }.joined()
        try lines.write(toFile: jar, atomically: false, encoding: .utf8)
        let quiet = try await Self.store(jar, ["new=\(Self.secret)"])
        Self.expectOneMessage(quiet, status: 0, contains: ["\(jar): 1 of 1 Set-Cookie value(s) refused", "--verbose"])
        let loud = try await Self.store(jar, ["new=\(Self.secret)"], verbose: true)
        #expect(loud.stderr == "rejected cookie new: example.com already holds 180 cookies (the per-domain limit) read from the jar file, which are never evicted\n")
        #expect(try Self.netscape(jar).count == 200)
    }

    @Test("181 cookies in one run: the eviction is reported with its reason, by name only")
    func evictionReported() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let values = (0..<181).map { "c\($0)=\(Self.secret)" }
        let quiet = try await Self.store(jar, values)
        Self.expectOneMessage(quiet, status: 0, contains: ["1 cookie(s) evicted over a limit; 180 cookie(s) written"])
        let again = folder.path("again.txt")
        let loud = try await Self.store(again, values, verbose: true)
        #expect(loud.stderr.contains("evicted c0 for example.com/: example.com held more than 180 cookies (the per-domain limit)"))
        #expect(!loud.stderr.contains(Self.secret))
        #expect(try Self.netscape(again).count == 180)
    }

    // MARK: Formats

    @Test("the Playwright file jar list writes reads back with list and convert, and store keeps its format")
    func playwrightRoundTrip() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.txt"), state = folder.path("state.json")
        #expect(try await Self.store(jar, ["a=1; Secure", "b=2; Max-Age=600"]).status == 0)
        let written = try await Self.run(["jar", "list", jar, "--format", "playwright", "--now", Self.now])
        try written.stdout.write(toFile: state, atomically: false, encoding: .utf8)
        let listed = try await Self.run(["jar", "list", state, "--format", "header", "--now", Self.now])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout == "a=1; b=2\n")
        let converted = try await Self.run(["jar", "convert", state, "-", "--format", "netscape"])
        #expect(converted.status == 0 && converted.stdout.contains("\ta\t1"))
        #expect(try await Self.store(state, ["c=3"]).status == 0)
        let after = try String(contentsOfFile: state, encoding: .utf8)
        #expect(CookieFormat.guess(from: after) == .playwright)
        #expect(try CookieCodec.decode(after, as: .playwright, url: nil, now: Date()).map(\.name) == ["a", "b", "c"])
    }

    // MARK: Concurrency

    @Test("20 concurrent jar store runs of different cookies into one file: all 20 survive")
    func concurrentStores() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let binary = try #require(CLIRunner.executable).path
        let results = try await withThrowingTaskGroup(of: ProgramResult.self) { group in
            for index in 0..<20 {
                // Not the shared slots: the point is that they run at the same moment.
                group.addTask {
                    try await runProgram(binary, ["jar", "store", jar, "--url", "https://example.com/", "--", "c\(index)=\(index)"])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.errorText))")
        #expect(Set(try Self.netscape(jar).map(\.name)) == Set((0..<20).map { "c\($0)" }))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["cookies.txt"])
    }
}

/// The kind of file a path names, without following a last symbolic link.
func fileKind(_ path: String) throws -> String {
    let type = try FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType
    switch type {
    case .typeCharacterSpecial?: return "character device"
    case .typeDirectory?: return "directory"
    case .typeRegular?: return "regular"
    case .typeSymbolicLink?: return "symbolic link"
    default:
        var info = stat()
        guard lstat(path, &info) == 0 else { return "missing" }
        return (info.st_mode & S_IFMT) == S_IFIFO ? "fifo" : "other"
    }
}

/// `login --jar` as a user runs it against the demo site (SPEC section 9): checked before any request,
/// merged as `curl -b F -c F` does, `-` for standard output.
@Suite(.serialized) struct LoginJarTests {
    @Test func aSiteFileOrADeviceAsJarIsRefusedBeforeAnyRequest() async throws {
        try await LoginCLIWorld.with { world in
            let site = world.folder.path("sites/demo.yaml")
            let original = try #require(FileManager.default.contents(atPath: site))
            let run = try await world.login(["--jar", site])
            JarFileSafetyTests.expectOneMessage(run, status: 2, contains: ["\(site) is not a cookie jar", "not overwritten"])
            #expect(FileManager.default.contents(atPath: site) == original)
            #expect(try world.vaultFiles().isEmpty)
            let device = try await world.login(["--jar", "/dev/null"])
            JarFileSafetyTests.expectOneMessage(device, status: 2, contains: ["/dev/null is a character device"])
            #expect(try world.vaultFiles().isEmpty)
        }
    }

    @Test func theSitesCookiesReplaceItsOldOnesAndOtherSitesStay() async throws {
        try await LoginCLIWorld.with { world in
            let jar = world.folder.path("cookies.txt")
            try """
            # Netscape HTTP Cookie File
            .other.example\tTRUE\t/\tFALSE\t0\tother_a\t1
            shop.test\tFALSE\t/cart\tTRUE\t4102444800\tother_b\t2
            127.0.0.1\tFALSE\t/\tFALSE\t0\tstale_session\tOLD
            127.0.0.1\tFALSE\t/\tFALSE\t0\tdemo_session\tOLD

            """.write(toFile: jar, atomically: false, encoding: .utf8)
            let run = try await world.login(["--jar", jar, "--verbose"])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let cookies = try JarFileSafetyTests.netscape(jar)
            #expect(cookies.prefix(2).map(\.name) == ["other_a", "other_b"])
            #expect(!cookies.contains { $0.name == "stale_session" })
            let session = try #require(cookies.first { $0.name == "demo_session" })
            #expect(session.value != "OLD")
            #expect(cookies.filter { $0.name == "demo_session" }.count == 1)
            #expect(run.stderr.contains("(2 other cookie(s) kept)"))
        }
    }

    @Test func dashWritesTheJarToStandardOutputAndTheSummaryToStandardError() async throws {
        try await LoginCLIWorld.with { world in
            let run = try await world.login(["--jar", "-"])
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let cookies = try CookieCodec.decode(run.stdout, as: .netscape, url: nil, now: Date())
            #expect(cookies.contains { $0.name == "demo_session" })
            #expect(!run.stdout.contains("logged in"))
            #expect(run.stderr.contains("logged in to demo: demo_session until "))
            #expect(!FileManager.default.fileExists(atPath: world.folder.path("-")))
        }
    }
}
