import Foundation
import Locking
internal import PostgresNIO

/// A login one keeper asks of the keeper holding a site's lease (SPEC section 11: `min_valid`/`wait` and `refresh`
/// work fleet-wide). Sent as a NOTIFY on the change channel that every keeper already LISTENs to, naming the site
/// by its keyed-hash id (never its name); the holder's listener hands it to its subscribers. A request nobody holds
/// the lease for is lost, and the asking client's wait runs out: asks carry no state in the database.
public struct LoginRequest: Sendable, Hashable {
    public enum Kind: String, Sendable {
        /// A client found no session fit to serve (`min_valid`, `wait`): a login unless the holder backs off or
        /// waits for a person, as for its own clients.
        case wanted
        /// A manager asked for a login now (`refresh`): clears needs-attention.
        case refresh
    }

    public var site: String
    public var kind: Kind
}

/// The login requests this keeper's listener received, fanned out to its subscribers.
final class LoginRequestFeed: Sendable {
    private let subscribers = Locked<[UUID: AsyncStream<LoginRequest>.Continuation]>([:])

    func subscribe() -> AsyncStream<LoginRequest> {
        let (stream, continuation) = AsyncStream.makeStream(of: LoginRequest.self, bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    func deliver(_ request: LoginRequest) {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.yield(request) }
    }

    func finish() {
        for subscriber in subscribers.withLock({ state in defer { state = [:] }; return Array(state.values) }) { subscriber.finish() }
    }

    /// The payload of a request: `KIND:ID` (hex), told apart from the rows' `site:VERSION` by its kind.
    static func payload(_ kind: LoginRequest.Kind, id: [UInt8]) -> String { "login-\(kind.rawValue):" + SiteLeases.idKey(id) }

    /// The kind and id hex of a request's payload; nil for any other notification.
    static func parse(_ payload: String) -> (LoginRequest.Kind, String)? {
        guard payload.hasPrefix("login-"), let colon = payload.firstIndex(of: ":") else { return nil }
        let kindText = payload[payload.index(payload.startIndex, offsetBy: 6)..<colon]
        guard let kind = LoginRequest.Kind(rawValue: String(kindText)) else { return nil }
        return (kind, String(payload[payload.index(after: colon)...]))
    }
}

extension PostgresStore {
    /// Asks the keeper holding `site`'s lease for a login (one NOTIFY; see ``LoginRequest``).
    public func askForLogin(of site: String, kind: LoginRequest.Kind) async throws(PostgresStoreError) {
        let id = try keys().itemID(of: SiteLeases.item(site))
        let payload = LoginRequestFeed.payload(kind, id: id)
        try await perform("asking for a login of site '\(site)'", timeout: settings.renewalPeriod) { [client] in
            try await client.exhaust("SELECT pg_notify(\(Schema.channel), \(payload))")
        }
    }

    /// Logins other keepers ask of this one, for the sites it knows (``SiteLeases/know(sites:)``); whether it
    /// holds the lease is the subscriber's to judge.
    public func loginRequests() -> AsyncStream<LoginRequest> {
        loginRequestFeed.subscribe()
    }

    /// A notification's payload, when it is a login request: delivered to the subscribers by site name.
    /// Returns whether it was one.
    func receivedLoginRequest(_ payload: String) -> Bool {
        guard let (kind, idHex) = LoginRequestFeed.parse(payload) else { return false }
        if let site = leaseBook.withLock({ $0.names[idHex] }) { loginRequestFeed.deliver(LoginRequest(site: site, kind: kind)) }
        return true
    }
}
