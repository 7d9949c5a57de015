// The floor of the daemon's socket stack, for Benchmarks/run-socket and run-egress: SwiftNIO's own HTTP/1 pipeline
// (`configureHTTPServerPipeline`) on a Unix socket with one event loop and one channel handler that answers each
// path's bytes from a dictionary on the loop, with `Connection: close` on the answer when the request asks for it
// (NIO's `isKeepAlive`). Nothing of the daemon's own runs: no peer credentials, access rules, request deadline,
// board read, cookie jar or upstream request; nor the daemon's HTTPServer core (its deadline and idle timers, its
// conversion to HTTP types). What separates the daemon from this is its own work and its core's; what separates
// this from nginx is SwiftNIO's.
//
// usage: NIOFloor SOCKET ROOT   (ROOT: the files to serve, one per path: ROOT/v1/sites/x/cookies)
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: NIOFloor SOCKET ROOT\n".utf8))
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

/// Answers each request's path from `served` when its end is read.
final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var head: HTTPRequestHead?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
        case .body:
            break
        case .end:
            guard let request = head else { return }
            head = nil
            let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
            let body = served[path]
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            headers.add(name: "Content-Length", value: String(body?.readableBytes ?? 0))
            if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: body == nil ? .notFound : .ok, headers: headers))), promise: nil)
            if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            let keepAlive = request.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let server = try await ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(FloorHandler())
        }
    }
    .bind(unixDomainSocketPath: socketPath)
    .get()
try await server.closeFuture.get()
