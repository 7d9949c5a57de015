import Foundation
@testable import Platform
import Testing

/// SO_PEERCRED on a real connected pair of Unix-domain sockets: the peer is this very process.
@Suite struct PeerCredentialsTests {
    @Test func aConnectedSocketsPeerIsTheProcessAtTheOtherEnd() throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let peer = try PeerCredentials(socket: pair[0])
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
        #expect(peer.gid == getgid())
        // The supplementary groups are this process's own, as the kernel recorded them (SO_PEERGROUPS).
        let listed = Int(getgroups(0, nil))
        var groups = [gid_t](repeating: 0, count: max(listed, 1))
        let count = Int(getgroups(Int32(groups.count), &groups))
        #expect(Set(peer.supplementaryGroups) == Set(groups.prefix(max(count, 0))))
    }

    @Test func aDescriptorThatIsNoSocketIsASystemError() throws {
        let fd = open("/dev/null", O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(throws: SystemError.self) { try PeerCredentials(socket: fd) }
    }

    /// What an event loop's fixed-size SO_PEERGROUPS read holds: the sorted groups, then zeros.
    @Test func peerGroupsAreTheEntriesUpToTheLastNonzeroOne() {
        var buffer = KernelPeerGroups()
        #expect(buffer.groups.isEmpty)
        for (index, gid) in [UInt32(0), 27, 100, 65534].enumerated() { buffer.gids[index] = gid }
        #expect(buffer.groups == [0, 27, 100, 65534])
        for index in 0..<KernelPeerGroups.capacity { buffer.gids[index] = UInt32(index + 1) }
        #expect(buffer.groups.count == KernelPeerGroups.capacity)
        #expect(MemoryLayout<KernelPeerGroups>.size == KernelPeerGroups.capacity * 4)
    }

    /// A pid whose `Uid:` is not the peer's (the peer exited and the pid was reused) gives no groups.
    @Test func groupsOfAProcessWithAnotherUIDAreNotTaken() {
        #expect(UnixSocket.supplementaryGroups(pid: getpid(), uid: getuid() &+ 1).isEmpty)
        #expect(UnixSocket.supplementaryGroups(pid: -1, uid: getuid()).isEmpty)
    }
}
