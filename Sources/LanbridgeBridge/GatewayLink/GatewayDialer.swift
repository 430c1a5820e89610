import LanbridgeNet
import NIOCore
import NIOHTTP1

/// How the bridge dials its gateway, whichever protocol it speaks (PROTOCOL.md §12.1): `wss://`
/// with its certificate checked against the configured roots (or the system's), a loopback `ws://`
/// or a `unix:` socket with its listener's owner checked before a byte is sent.
struct GatewayDialer: Sendable {
    let endpoint: GatewayEndpoint
    let owners: Set<UInt32>
    private let tls: WebSocketClient.TLS?

    init(_ gateway: BridgeConfiguration.Gateway) {
        (endpoint, owners) = (gateway.endpoint, gateway.owners)
        tls = gateway.endpoint.secure ? .init(trustRootsFile: gateway.trustRootsFile) : nil
    }

    /// Dials and upgrades; `install` adds the caller's handlers on `loop` before any frame is read.
    func connect(
        headers: [(String, String)] = [], on loop: any EventLoop, maxMessageSize: Int,
        verifyResponse: (@Sendable (HTTPResponseHead) throws -> Void)? = nil,
        install: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> any Channel {
        let owners = owners
        // TLS proves a wss:// gateway; a local listener proves itself by its owner.
        let checkOwner: (@Sendable (any Channel) -> EventLoopFuture<String?>)? = endpoint.secure ? nil : { @Sendable channel in GatewayOwner.check(channel, allowed: owners) }
        return try await WebSocketClient.connect(
            to: endpoint.target, path: endpoint.path, headers: headers, tls: tls, on: loop,
            maxMessageSize: maxMessageSize, verifyPeer: checkOwner, verifyResponse: verifyResponse, install: install)
    }
}
