extension Cookie {
    /// How a list of cookies is shown to people (summaries, `status`, `login -v`, the socket's site detail): each
    /// by its name, and by `NAME (HOST)` when another cookie of the list has the same name (an identity
    /// provider's `sessionid` beside the app's), `NAME (HOST PATH)` when they share the host too. Never a value.
    ///
    /// `others` are cookies the reader sees elsewhere (the whole jar, when `cookies` are those one step set): a
    /// namesake among them counts too.
    public static func labels(_ cookies: [Cookie], among others: [Cookie] = []) -> [String] {
        var byName: [String: [Cookie]] = [:]
        for cookie in cookies { byName[cookie.name, default: []].append(cookie) }
        for cookie in others where byName[cookie.name] != nil {
            let known = byName[cookie.name] ?? []
            if !known.contains(where: { $0.domain == cookie.domain && $0.path == cookie.path }) { byName[cookie.name]?.append(cookie) }
        }
        return cookies.map { cookie in
            let namesakes = byName[cookie.name] ?? []
            guard namesakes.count > 1 else { return cookie.name }
            let sameHost = namesakes.filter { $0.domain == cookie.domain }.count > 1
            return "\(cookie.name) (\(cookie.domain)\(sameHost ? " " + cookie.path : ""))"
        }
    }
}
