import NIOCore
import Platform
import SocketAPI
import Testing

/// `TCPEndpoint(SocketAddress)`: a NIO address of either family becomes the endpoint with the same address
/// bytes and port; a Unix-domain address has none.
@Suite struct TCPEndpointSocketAddressTests {
    @Test(arguments: [("127.0.0.1", UInt16(8481)), ("::1", 443), ("::ffff:127.0.0.1", 8), ("192.0.2.7", 40000)])
    func anInternetAddressKeepsItsBytesAndPort(address: String, port: UInt16) throws {
        let nio = try SocketAddress(ipAddress: address, port: Int(port))
        #expect(TCPEndpoint(nio) == TCPEndpoint(ipAddress: address, port: port))
    }

    @Test func aUnixDomainAddressIsNoEndpoint() throws {
        #expect(TCPEndpoint(try SocketAddress(unixDomainSocketPath: "/tmp/sk.sock")) == nil)
    }
}
