import HTTPServer
import HTTPTypes
import NIOCore

/// Switches for tests under `/_control/`; they answer on either host and even while the site is down.
struct ControlRoutes: Sendable {
    let site: SiteContext

    func register(on router: RouteTable) {
        router.post("/_control/revoke-all") { _ in
            Reply.json(["revoked": await self.site.store.revokeAll()])
        }
        router.post("/_control/down") { request in
            let down: Bool
            switch request.queryParameter("enabled") {
            case "true": down = true
            case "false": down = false
            default: return Reply.error(.badRequest, "query parameter enabled must be true or false")
            }
            await self.site.store.setDown(down)
            return Reply.json(["down": down])
        }
        router.get("/_control/stats") { _ in
            Reply.json(await self.site.store.currentStatistics())
        }
    }
}
