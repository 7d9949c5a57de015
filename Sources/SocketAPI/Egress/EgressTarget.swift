import HummingbirdCore

/// The part of a request target the egress route sends on: what follows the route's prefix.
enum EgressTarget {
    /// `/PATH?QUERY` of `uri` after `prefix` (the path as the client wrote it, percent-encoding kept); "" or
    /// `?QUERY` alone for the prefix itself. A path that does not start with `prefix` (the router matched a
    /// differently spelled one) yields its whole path.
    static func rest(of uri: URI, after prefix: String) -> Substring {
        let path = uri.path
        var rest = path.hasPrefix(prefix) ? Substring(path.dropFirst(prefix.count)) : Substring(path)
        if !rest.isEmpty, rest.first != "/" { rest = Substring(path) }
        guard let query = uri.query else { return rest }
        return Substring(String(rest) + "?" + query)
    }
}
