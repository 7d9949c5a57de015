import Daemon
import Hummingbird
import NIOCore
import Platform

/// A request's context: Hummingbird's core plus the peer that sent it (filled by ``APIMiddleware`` before any
/// route runs).
struct APIContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on (its peer credentials are looked up by it).
    let channel: any Channel
    /// Nobody until ``APIMiddleware`` sets the real peer: an unknown peer may see nothing.
    var peer = PeerCredentials(pid: 0, uid: .max, gid: .max)

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

/// The socket's routes as patterns, for the answers the router cannot give: 405 for a known path with
/// another method, and a bounded `route` label in the metrics.
enum RouteTable {
    static let routes: [(pattern: String, methods: [HTTPRequest.Method])] = [
        ("/v1/health", [.get]),
        ("/v1/sites", [.get]),
        ("/v1/sites/{name}", [.get]),
        ("/v1/sites/{name}/cookies", [.get]),
        ("/v1/sites/{name}/refresh", [.post]),
        ("/v1/sites/{name}/report", [.post]),
        ("/v1/sites/{name}/set-cookie", [.post]),
        ("/v1/events", [.get]),
        ("/v1/reload", [.post]),
        ("/metrics", [.get]),
    ]

    /// Each pattern's segments, split once.
    private static let segmented = routes.map { $0.pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst() }

    /// The route whose pattern `path` matches (`{name}` matches one non-empty segment).
    static func match(_ path: String) -> (pattern: String, methods: [HTTPRequest.Method])? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let index = segmented.firstIndex { parts in
            guard parts.count == segments.count else { return false }
            return zip(parts, segments).allSatisfy { part, segment in
                part.hasPrefix("{") ? !segment.isEmpty : part == segment
            }
        }
        return index.map { routes[$0] }
    }
}

/// Runs around every request: puts the peer into the context, turns every error into the JSON error body
/// (unknown route 404, wrong method 405, body too large 413, a daemon fault 500), and counts the answer.
struct APIMiddleware: RouterMiddleware {
    typealias Context = APIContext

    let peers: PeerRegistry
    let metrics: DaemonMetrics

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        let route = RouteTable.match(request.uri.path)
        let response = await answer(request, context: context, route: route, next: next)
        metrics.requestAnswered(route: route?.pattern ?? "unmatched", status: response.status.code)
        return response
    }

    private func answer(
        _ request: Request, context: APIContext, route: (pattern: String, methods: [HTTPRequest.Method])?,
        next: (Request, APIContext) async throws -> Response
    ) async -> Response {
        var context = context
        guard let peer = await peers.peer(of: context.channel) else {
            return APIError(.forbidden, .forbidden, "the peer's credentials could not be read").response()
        }
        context.peer = peer
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response()
        } catch let error as HTTPError where error.status == .notFound {
            if let route, !route.methods.contains(request.method) {
                var response = APIError(
                    .methodNotAllowed, .methodNotAllowed,
                    "\(route.pattern) takes \(route.methods.map(\.rawValue).joined(separator: ", ")), not \(request.method.rawValue)"
                ).response()
                response.headers[.allow] = route.methods.map(\.rawValue).joined(separator: ", ")
                return response
            }
            return APIError(.notFound, .notFound, "no route \(request.method.rawValue) \(request.uri.path)").response()
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return APIError(.contentTooLarge, .tooLarge, "the request body is too large").response()
        } catch {
            context.logger.error("request failed", metadata: ["route": "\(route?.pattern ?? "unmatched")", "error": "\(error)"])
            return APIError(.internalServerError, .internal, "the daemon failed to answer; see its log").response()
        }
    }
}
