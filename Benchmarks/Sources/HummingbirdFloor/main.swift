// The floor of the daemon's own socket stack, for Benchmarks/run-socket and run-egress: Hummingbird 2 on a Unix
// socket with one event loop, the accept loop and each connection's task preferring that loop as their executor
// (the quicker arrangement for one-request connections; the daemon keeps its accept loop off the loop, see
// `SocketHTTPChannel.handle`), and routes of the same patterns as the daemon's cookies and egress routes that
// answer each path's bytes from a dictionary, with `Connection: close` on the answer when the request asks for
// it. Nothing of the daemon's own runs: no peer credentials, access rules, request deadline, board read, cookie
// jar or upstream request. What separates the daemon from this is its own work; what separates this from nginx
// is the framework's.
//
// usage: HummingbirdFloor SOCKET ROOT   (ROOT: the files to serve, one per path: ROOT/v1/sites/x/cookies)
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: HummingbirdFloor SOCKET ROOT\n".utf8))
    exit(2)
}
let socketPath = arguments[1]
let root = URL(fileURLWithPath: arguments[2], isDirectory: true).standardizedFileURL.path

/// Each file under ROOT, as the path nginx serves it at.
var bodies: [String: ByteBuffer] = [:]
let walker = FileManager.default.enumerator(atPath: root)
while let relative = walker?.nextObject() as? String {
    let file = root + "/" + relative
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue,
          let data = FileManager.default.contents(atPath: file) else { continue }
    bodies["/" + relative] = ByteBuffer(bytes: data)
}
let served = bodies

/// A task executor that runs jobs on one event loop (what the daemon's `EventLoopExecutor` does).
final class LoopExecutor: TaskExecutor {
    let loop: any EventLoop
    init(_ loop: any EventLoop) { self.loop = loop }
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// `Connection: close` on the answer to a request that asked for it (RFC 9112 section 9.6), as the daemon sends
/// it: without it a client takes the closed connection for an error.
struct ConnectionCloseAnswer<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if request.headers[.connection]?.lowercased() == "close" { response.headers[.connection] = "close" }
        return response
    }
}

var logger = Logger(label: "floor")
logger.logLevel = .warning
let router = Router()
router.add(middleware: ConnectionCloseAnswer())
/// The file at the request's path.
@Sendable func answer(_ request: Request, _ context: BasicRequestContext) -> Response {
    guard let body = served[request.uri.path] else { return Response(status: .notFound) }
    return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: body))
}
// The patterns of the daemon's cookies route (Benchmarks/run-socket) and egress route (Benchmarks/run-egress).
router.get("/v1/sites/:name/cookies") { request, context in answer(request, context) }
router.get("/v1/sites/:name/proxy/**") { request, context in answer(request, context) }
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let application = Application(
    router: router,
    configuration: ApplicationConfiguration(address: .unixDomainSocket(path: socketPath), serverName: nil),
    eventLoopGroupProvider: .shared(group),
    logger: logger)
try await withTaskExecutorPreference(LoopExecutor(group.next())) {
    try await application.run()
}
