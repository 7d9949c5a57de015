import Daemon
import HTTPServer
import HTTPTypes
import Logging
import NIOCore
import Platform
import SocketRoutes

/// What a route knows of its request beside the request itself: the peer that sent it (read when its connection
/// was admitted) and the site its path names.
struct APIContext: Sendable {
    /// The connection the request came on.
    let channel: any Channel
    let peer: PeerCredentials
    /// The path's `{name}` segment; "" for a route without one.
    let name: String
}

/// The socket's ``HTTPResponder``: finds the route of each request in ``SocketRoute``'s table (unknown route 404,
/// wrong method 405), gives it the peer its connection was admitted with, turns every error into the JSON error
/// body (a daemon fault 500), and counts the answer in the metrics.
///
/// A route that can answer from what the event loop reads without a hop (a session on the Keeper's board, the
/// `reload` signal) answers at once; any other waits for the Keeper in one task (``APIRoutes/answerNow(_:_:_:)``).
struct APIResponder: HTTPResponder {
    let routes: APIRoutes
    let peers: PeerRegistry
    let metrics: DaemonMetrics
    let logger: Logger

    func bodyStreams(_ request: ServerRequest) -> Bool {
        SocketRoute.streamsRequestBody(path: request.path)
    }

    func respond(to request: ServerRequest) -> ServerReply {
        let matched = SocketRoute.matching(request.path)
        guard let route = matched.first(where: { $0.httpMethods.contains(request.method) }) else {
            return .now(counted(Self.noRoute(request, matched: matched), route: matched.first?.pattern ?? "unmatched"))
        }
        guard let peer = peers.known(of: request.channel) else {
            return .now(counted(APIError(.forbidden, .forbidden, "the peer's credentials could not be read").response(), route: route.pattern))
        }
        let context = APIContext(channel: request.channel, peer: peer, name: SocketRoute.siteName(in: request.path))
        do {
            if let response = try routes.answerNow(route, request, context) { return .now(counted(response, route: route.pattern)) }
        } catch {
            return .now(counted(error.response(), route: route.pattern))
        }
        return .later {
            let response: ServerResponse
            do {
                response = try await routes.answer(route, request, context)
            } catch let error as APIError {
                response = error.response()
            } catch {
                logger.error("request failed", metadata: ["route": "\(route.pattern)", "error": "\(error)"])
                response = APIError(.internalServerError, .internal, "the daemon failed to answer; see its log").response()
            }
            return counted(response, route: route.pattern)
        }
    }

    private func counted(_ response: ServerResponse, route: String) -> ServerResponse {
        metrics.requestAnswered(route: route, status: response.status.code)
        return response
    }

    /// 405 for a path whose routes take other methods (with `Allow`), else 404.
    static func noRoute(_ request: ServerRequest, matched: [SocketRoute]) -> ServerResponse {
        guard let pattern = matched.first?.pattern else {
            return APIError(.notFound, .notFound, "no route \(request.method.rawValue) \(request.path)").response()
        }
        let methods = matched.flatMap(\.methods).joined(separator: ", ")
        var response = APIError(.methodNotAllowed, .methodNotAllowed, "\(pattern) takes \(methods), not \(request.method.rawValue)").response()
        response.headers[.allow] = methods
        return response
    }
}
