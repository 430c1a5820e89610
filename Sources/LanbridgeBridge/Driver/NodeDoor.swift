import FoundationEssentials
import LanbridgeCrypto
import LanbridgeCore
import LanbridgeDiscovery
import LanbridgeNet
import LanbridgeStores
import LanbridgeTransport
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Prometheus

/// The nodes' door: the listeners on each `listen` address, and each connection's admission and
/// pipeline (handshake, outbox, session) before the driver takes it.
enum NodeDoor {
    /// One listener per `listen` entry, all on one port: the first picks it when `port` is 0.
    /// If any cannot bind, those already bound are closed and the start fails.
    static func bind(
        _ configuration: BridgeConfiguration, identity: X25519.KeyPair, admission: Admission,
        invites: InviteCache, driver: BridgeDriver, logger: Logger
    ) async throws -> [any Channel] {
        var servers: [any Channel] = []
        var port = configuration.port
        do {
            for (listener, bind) in configuration.listen.enumerated() {
                let server = try await BindProblem.explaining(host: bind.host, port: port) {
                    try await ServerBootstrap(group: driver.loop)
                        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                        // After a restart every node reconnects at once: a short accept queue (NIO's
                        // default is 256) drops SYNs, and each dropped node waits out TCP's 1-3-7 s retries.
                        .serverChannelOption(.backlog, value: BridgeServer.acceptBacklog)
                        .childChannelOption(.socketOption(.so_keepalive), value: 1)
                        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                        .childChannelOption(.recvAllocator, value: BridgeServer.nodeReceiveBuffers)
                        // What a node has not read stays in its outbox above this (NodeOutbox).
                        .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 << 10, high: 256 << 10))
                        .childChannelInitializer { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try admit(
                                    channel, listener: listener, configuration: configuration, identity: identity, admission: admission,
                                    invites: invites, driver: driver, logger: logger)
                            }
                        }
                        .bind(host: bind.host, port: port).get()
                }
                servers.append(server)
                port = server.localAddress?.port ?? port
            }
        } catch {
            for server in servers { try? await server.close() }
            throw error
        }
        return servers
    }

    /// A new node connection: admitted (or refused) by the admission policy, then given its
    /// handshake and its place in the driver.
    private static func admit(
        _ channel: any Channel, listener: Int, configuration: BridgeConfiguration, identity: X25519.KeyPair,
        admission: Admission, invites: InviteCache, driver: BridgeDriver, logger: Logger
    ) throws {
        let address = channel.remoteAddress?.ipAddress ?? "?"
        let decision = admission.connection(from: address, listener: listener, close: { channel.close(promise: nil) })
        guard case let .admit(slot, _, handshakeTimeout) = decision else {
            channel.close(promise: nil)
            return
        }
        // With OpenClaw's gateway a paired node holds a second descriptor, its socket there.
        let cost = configuration.gateway?.wire == .openclaw ? 2 : 1
        let ticket = driver.descriptors?.admit(channel, peer: DescriptorGate.peer(of: channel.remoteAddress), cost: cost)
        if driver.descriptors != nil, ticket == nil {
            admission.release(slot)
            channel.close(promise: nil)
            return
        }
        let id = driver.accepted(channel, slot: slot, ticket: ticket)
        try addSession(
            to: channel, id: id, address: address, handshakeTimeout: min(handshakeTimeout, configuration.handshakeTimeout),
            configuration: configuration, identity: identity, invites: invites, driver: driver, logger: logger)
    }

    /// A node's session on `channel` (`id` from the driver): the handshake, the outbox and the
    /// session handler. The browser door adds the same, over its WebSocket frames; on an
    /// unverified page (`invitesAllowed` false) an invite's preamble is refused as unknown.
    static func addSession(
        to channel: any Channel, id: ConnectionID, address: String, handshakeTimeout: Double, configuration: BridgeConfiguration,
        identity: X25519.KeyPair, invites: InviteCache, invitesAllowed: Bool = true, driver: BridgeDriver, logger: Logger
    ) throws {
        let session = SecureSession(
            responderWith: identity, limits: configuration.limits, inviteLookup: { id in invitesAllowed ? invites.psk(for: id) : nil })
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(IdleStateHandler(readTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000))))
        try sync.addHandler(IdleCloser(logger: logger))
        try sync.addHandler(SecureChannelHandler(responder: session, handshakeTimeout: .milliseconds(Int64(handshakeTimeout * 1000)), logger: logger))
        try sync.addHandler(
            NodeOutbox(limit: configuration.settings.limits[.nodeQueueBytes]) { backlogged in driver.submit(.nodeBacklog(id, backlogged), order: .inOrder) })
        try sync.addHandler(NodeSessionHandler(driver: driver, id: id, address: address))
    }
}
