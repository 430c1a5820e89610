import Foundation
@testable import LanbridgeBridge
@testable import LanbridgeCore
import NIOCore
import NIOPosix
import Testing

/// The kernel says which uid owns the other end of a loopback connection (NETLINK_SOCK_DIAG).
@Suite struct LoopbackPeerTests {
    @Test(arguments: ["127.0.0.1", "::1"]) func theKernelNamesTheUidOfTheClientsSocket(host: String) throws {
        let server = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: host, port: 0).wait()
        defer { try? server.close().wait() }
        let client = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(to: server.localAddress!).wait()
        defer { try? client.close().wait() }
        // From the server's side: its local address is the client's remote, and the other way round.
        #expect(LoopbackPeer.uid(local: client.remoteAddress, remote: client.localAddress) == getuid())
        #expect(LoopbackPeer.isLoopback(client.localAddress))
    }

    @Test func aConnectionThatDoesNotExistHasNoUid() throws {
        let a = try SocketAddress(ipAddress: "127.0.0.1", port: 1), b = try SocketAddress(ipAddress: "127.0.0.1", port: 2)
        #expect(LoopbackPeer.uid(local: a, remote: b) == nil)
        #expect(!LoopbackPeer.isLoopback(try SocketAddress(ipAddress: "10.0.0.1", port: 1)))
    }
}
