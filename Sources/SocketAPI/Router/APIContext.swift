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

/// Runs around every request: puts the peer into the context, turns every error into the JSON error body
/// (unknown route 404, wrong method 405, body too large 413, a daemon fault 500), and counts the answer.
struct APIMiddleware: RouterMiddleware {
    typealias Context = APIContext

    let peers: PeerRegistry
    let metrics: DaemonMetrics

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        // The route Hummingbird matched, by its pattern (read before `next`, which names an unmatched one
        // "NotFound"); a path with no route for this method, or none at all, is looked up in the table.
        let matched = context.endpointPath
        let response = await answer(request, context: context, next: next)
        let route = matched ?? APIRoute.matching(request.uri.path).first?.pattern ?? "unmatched"
        metrics.requestAnswered(route: route, status: response.status.code)
        return response
    }

    private func answer(
        _ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response
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
            let routes = APIRoute.matching(request.uri.path)
            if let pattern = routes.first?.pattern, !routes.contains(where: { $0.methods.contains(request.method) }) {
                let methods = routes.flatMap(\.methods).map(\.rawValue).joined(separator: ", ")
                var response = APIError(
                    .methodNotAllowed, .methodNotAllowed, "\(pattern) takes \(methods), not \(request.method.rawValue)"
                ).response()
                response.headers[.allow] = methods
                return response
            }
            return APIError(.notFound, .notFound, "no route \(request.method.rawValue) \(request.uri.path)").response()
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return APIError(.contentTooLarge, .tooLarge, "the request body is too large").response()
        } catch {
            context.logger.error("request failed", metadata: ["route": "\(context.endpointPath ?? "unmatched")", "error": "\(error)"])
            return APIError(.internalServerError, .internal, "the daemon failed to answer; see its log").response()
        }
    }
}
