import HTTPTypes
import Locking

/// A table of exact paths and methods, each with the async function that answers it: for a server whose every
/// answer waits for something (the demo site's state is an actor), built once before it serves.
public final class RouteTable: Sendable {
    public typealias Handler = @Sendable (ServerRequest) async -> ServerResponse

    private struct Key: Hashable {
        var method: HTTPRequest.Method
        var path: String
    }

    private let routes = Locked<[Key: Handler]>([:])

    public init() {}

    /// Answers `method` on `path` (exactly: no parameters, no prefix) with `handler`; a `GET` answers `HEAD` too,
    /// without its body.
    public func on(_ path: String, method: HTTPRequest.Method, _ handler: @escaping Handler) {
        routes.withLock { $0[Key(method: method, path: path)] = handler }
    }

    public func get(_ path: String, _ handler: @escaping Handler) { on(path, method: .get, handler) }
    public func post(_ path: String, _ handler: @escaping Handler) { on(path, method: .post, handler) }

    /// What answers `method` on `path`; nil when nothing does.
    public func handler(_ method: HTTPRequest.Method, _ path: Substring) -> Handler? {
        let path = String(path)
        return routes.withLock { routes in
            routes[Key(method: method, path: path)] ?? (method == .head ? routes[Key(method: .get, path: path)] : nil)
        }
    }
}
