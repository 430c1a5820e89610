import Logging
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeState
import LanbridgeCrypto
import LanbridgeTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// The canvas relay (issue 37 §1): HTTPS on the bridge's LAN addresses, for paired nodes only.
/// Each request's head is read and decided (`CanvasRequest`), its capability looked up in the core
/// (a `.canvasUse` event), and only then is the canvas host dialled, with the head rebuilt for it.
/// From there `CanvasExchange` decides what moves: the response, read as HTTP and filtered, or,
/// after a checked switch, the live-reload socket's frames. Backpressure both ways.
///
/// Keep-alive (issue 53 §1): one request at a time. When an answer ends cleanly the connection
/// rests (evictable, `canvasKeepAliveMs`), and the next head is read only once the whole answer
/// is written; it is decided as the first was, for the same node. Bytes sent behind a head (a
/// pipelined request) are never read as one: the connection closes after the answer.
///
/// Bounds (all in `limits`): the head's size and arrival time, idle and total time, the
/// response's size, connections per node and in all (`CanvasConnectionTable` decides which go).
final class CanvasRelay: @unchecked Sendable {
    struct Configuration {
        var tls: DoorTLS
        var upstream: CanvasUpstream
        var limits: BridgeSettings.Limits
        /// OpenClaw's canvas host wants its capability: without one for the node, nothing is sent.
        var upstreamNeedsCapability: Bool
        /// The canvas host's origins, as its own absolute URLs name it (rewritten to the relay's).
        var upstreamOrigins: [String] { ["http://\(upstream.hostHeader)"] + CanvasRelayInfo.origins(of: upstream) }
    }

    let configuration: Configuration
    private let driver: BridgeDriver
    private let logger: Logger
    private let table: NIOLockedValueBox<CanvasConnectionTable<any Channel>>
    /// Its own thread: TLS handshakes and bulk bytes never run on the core's loop, so a flood at
    /// the relay delays no invoke beyond sharing the CPU.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let refusals = NIOLockedValueBox(RefusalSummary())

    init(_ configuration: Configuration, driver: BridgeDriver, logger: Logger) {
        self.configuration = configuration
        table = NIOLockedValueBox(CanvasConnectionTable(total: configuration.limits[.canvasConnections], perNode: configuration.limits[.canvasConnectionsPerNode]))
        self.driver = driver
        self.logger = logger
    }

    /// `https://host:port` as a node reached the relay.
    static func origin(of address: SocketAddress?) -> String {
        let host = address?.ipAddress ?? "?"
        return "https://\(host.contains(":") ? "[\(host)]" : host):\(address?.port ?? 0)"
    }

    func bind(host: String, port: Int) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: true)
            // What a slow reader can make the relay hold: a TLS record or two per connection.
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 << 10, high: 32 << 10))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    // Two descriptors each: the node's, and the canvas host's it dials once proven.
                    let ticket = driver.descriptors?.admit(channel, peer: DescriptorGate.peer(of: channel.remoteAddress), cost: 2)
                    guard driver.descriptors == nil || ticket != nil, let id = admit(channel) else {
                        channel.close(promise: nil)
                        return
                    }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: configuration.tls.served.relayContext))
                    try sync.addHandler(IdleStateHandler(allTimeout: .milliseconds(Int64(configuration.limits[.canvasIdleMs]))))
                    try sync.addHandler(CanvasFrontHandler(relay: self, id: id, ticket: ticket))
                }
            }
            .bind(host: host, port: port).get()
    }

    // MARK: - Connections (any loop; the table decides, under its lock)

    /// A new connection's ID, or nil when every slot is held by a connection that proved a capability.
    private func admit(_ channel: any Channel) -> Int? {
        let (id, evicted) = table.withLockedValue { $0.admit(channel) }
        if let evicted { evicted.close(promise: nil) }
        if evicted != nil || id == nil { refused("canvasConnections", peer: channel.remoteAddress) }
        return id
    }

    /// The connection showed a live capability for `node`: false when the node holds its bound already.
    func proven(_ id: Int, ticket: DescriptorGate.Ticket?, node: Fingerprint) -> Bool {
        let (proven, evicted) = table.withLockedValue { $0.prove(id, node: node) }
        evicted?.close(promise: nil)
        if proven { driver.descriptors?.prove(ticket) }
        return proven
    }

    /// A kept connection waits for its next request (evictable meanwhile); false when it is gone.
    func rest(_ id: Int, node: Fingerprint) -> Bool {
        table.withLockedValue { $0.rest(id, node: node) }
    }

    /// A kept connection's next request, for `node`: false when it was evicted, or `node` is not its own.
    func resume(_ id: Int, node: Fingerprint) -> Bool {
        table.withLockedValue { $0.resume(id, node: node) }
    }

    func closed(_ id: Int, node: Fingerprint?) {
        table.withLockedValue { $0.closed(id, node: node) }
    }

    /// The node's capability died: its connections close now (live-reload sockets included).
    func revoke(_ node: Fingerprint) {
        for channel in table.withLockedValue({ $0.revoke(node) }) { channel.close(promise: nil) }
    }

    var connectionCount: Int { table.withLockedValue { $0.count } }

    /// After its listeners closed: every connection goes, then the thread.
    func stop() async {
        let open = table.withLockedValue { $0.all }
        for channel in open { try? await channel.close() }
        try? await group.shutdownGracefully()
    }
    var driverMetrics: BridgeMetrics { driver.metrics }

    // MARK: - Deciding (the core's loop)

    func lookUp(_ capability: String) -> EventLoopFuture<CanvasUse> {
        driver.canvasUse(capability)
    }

    /// A fresh gateway capability for `node` (the canvas host refused the one held), or nil.
    func refreshUpstream(_ node: Fingerprint) -> EventLoopFuture<String?> {
        driver.refreshUpstreamCanvas(node)
    }

    func dialUpstream(on loop: any EventLoop, front: CanvasFrontHandler) -> EventLoopFuture<any Channel> {
        let front = NIOLoopBound(front, eventLoop: loop)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(5))
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 << 10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(CanvasUpstreamHandler(front: front.value))
                }
            }
        switch configuration.upstream {
        case let .tcp(host, port): return bootstrap.connect(host: host, port: port)
        case let .unix(path): return bootstrap.connect(unixDomainSocketPath: path)
        }
    }

    // MARK: - Refusals: counted always, logged once a minute with the count since

    func refused(_ reason: String, peer: SocketAddress?) {
        driver.metrics.canvasRefused(reason)
        if let count = refusals.withLockedValue({ $0.note(reason, now: .now) }) {
            logger.warning(
                "canvas relay refused a request: \(reason)\(reason.hasPrefix("canvas") ? " (limits.\(reason))" : "")",
                metadata: ["peer": "\(PeerAddress.format(peer))", "since": "\(count)"])
        }
    }
}
