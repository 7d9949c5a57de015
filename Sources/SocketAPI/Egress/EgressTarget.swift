import HTTPServer

/// The part of a request target the egress route sends on: what follows the route's prefix.
enum EgressTarget {
    /// `/PATH?QUERY` of `request` after `prefix` (the path as the client wrote it, percent-encoding kept); "" or
    /// `?QUERY` alone for the prefix itself. A path that does not start with `prefix` yields its whole path.
    static func rest(of request: ServerRequest, after prefix: String) -> Substring {
        let path = request.path
        var rest = path.hasPrefix(prefix) ? path.dropFirst(prefix.count) : path
        if !rest.isEmpty, rest.first != "/" { rest = path }
        guard let query = request.query else { return rest }
        return Substring(String(rest) + "?" + query)
    }
}
