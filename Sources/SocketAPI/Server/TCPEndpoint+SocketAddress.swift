public import NIOCore
public import Platform

extension TCPEndpoint {
    /// The endpoint of a NIO socket address; nil for a Unix-domain address.
    public init?(_ socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let ipv4):
            var raw = ipv4.address.sin_addr
            self.init(address: .ipv4(withUnsafeBytes(of: &raw) { Array($0) }), port: UInt16(bigEndian: ipv4.address.sin_port))
        case .v6(let ipv6):
            var raw = ipv6.address.sin6_addr
            self.init(address: .ipv6(withUnsafeBytes(of: &raw) { Array($0) }), port: UInt16(bigEndian: ipv6.address.sin6_port))
        case .unixDomainSocket:
            return nil
        }
    }
}
