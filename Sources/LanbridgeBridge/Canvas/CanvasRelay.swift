import Logging
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeState
import LanbridgeTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// The canvas relay (issue 37 §1): HTTPS on the bridge's LAN addresses, for paired nodes only.
/// Each connection carries one request: its head is read and decided (`CanvasRequest`), its
/// capability looked up in the core (`BridgeCore.canvasUse`), and only then is the canvas host
/// dialled, with the head rebuilt for it; the response streams back through
/// `CanvasResponseFilter`, with backpressure both ways. A WebSocket upgrade (live reload) stays
/// open as a byte pipe until either side closes or the node's capability dies.
///
/// Bounds (all in `limits`): the head's size and arrival time, idle and total time, the
/// response's size, connections per node and in all. Connections that have not shown a live
/// capability yet count in all, and when all is full the oldest of them is closed for a new one.
final class CanvasRelay: @unchecked Sendable {
    struct Configuration {
        var certificate: CanvasCertificate
        var upstream: CanvasUpstream
        var limits: BridgeSettings.Limits
        /// OpenClaw's canvas host wants its capability: without one for the node, nothing is sent.
        var upstreamNeedsCapability: Bool
    }

    let configuration: Configuration
    private let driver: BridgeDriver
    private let logger: Logger
    /// Replaced by `lanbridge canvas rotate-cert`: new connections get the new certificate.
    private let context: NIOLockedValueBox<NIOSSLContext>
    private let table = NIOLockedValueBox(Connections())
    /// Its own thread: TLS handshakes and bulk bytes never run on the core's loop, so a flood at
    /// the relay delays no invoke beyond sharing the CPU.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let refusals = NIOLockedValueBox(RefusalSummary())

    struct Connections {
        var nextID = 0
        /// Connections without a live capability yet, oldest first (by ID).
        var unproven: [Int: any Channel] = [:]
        var byNode: [Fingerprint: [Int: any Channel]] = [:]
        var total: Int { unproven.count + byNode.values.reduce(0) { $0 + $1.count } }
    }

    init(_ configuration: Configuration, driver: BridgeDriver, logger: Logger) throws {
        self.configuration = configuration
        self.driver = driver
        self.logger = logger
        context = NIOLockedValueBox(try Self.context(configuration.certificate))
    }

    static func context(_ certificate: CanvasCertificate) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate.certificate)], privateKey: .privateKey(certificate.key))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["http/1.1"]
        return try NIOSSLContext(configuration: tls)
    }

    /// Serve this certificate from now on.
    func use(_ certificate: CanvasCertificate) throws {
        let next = try Self.context(certificate)
        context.withLockedValue { $0 = next }
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
                    guard let id = admit(channel) else {
                        channel.close(promise: nil)
                        return
                    }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context.withLockedValue { $0 }))
                    try sync.addHandler(IdleStateHandler(allTimeout: .milliseconds(Int64(configuration.limits.canvasIdleMs))))
                    try sync.addHandler(CanvasFrontHandler(relay: self, id: id))
                }
            }
            .bind(host: host, port: port).get()
    }

    // MARK: - Connections (any loop; the table is locked)

    /// A new connection's ID, or nil when every slot is held by a connection that proved a capability.
    private func admit(_ channel: any Channel) -> Int? {
        let (id, evicted): (Int?, (any Channel)?) = table.withLockedValue { t in
            var evicted: (any Channel)?
            if t.total >= configuration.limits.canvasConnections {
                guard let oldest = t.unproven.keys.min() else { return (nil, nil) }
                evicted = t.unproven.removeValue(forKey: oldest)
            }
            t.nextID += 1
            t.unproven[t.nextID] = channel
            return (t.nextID, evicted)
        }
        if let evicted { evicted.close(promise: nil) }
        if evicted != nil || id == nil { refused("canvasConnections", peer: channel.remoteAddress) }
        return id
    }

    /// The connection showed a live capability for `node`: false when the node holds its bound already.
    func proven(_ id: Int, node: Fingerprint) -> Bool {
        table.withLockedValue { t in
            guard let channel = t.unproven.removeValue(forKey: id) else { return false }  // evicted meanwhile
            guard t.byNode[node, default: [:]].count < configuration.limits.canvasConnectionsPerNode else { return false }
            t.byNode[node, default: [:]][id] = channel
            return true
        }
    }

    func closed(_ id: Int, node: Fingerprint?) {
        table.withLockedValue { t in
            t.unproven[id] = nil
            if let node {
                t.byNode[node]?[id] = nil
                if t.byNode[node]?.isEmpty == true { t.byNode[node] = nil }
            }
        }
    }

    /// The node's capability died: its connections close now (live-reload sockets included).
    func revoke(_ node: Fingerprint) {
        let channels = table.withLockedValue { $0.byNode.removeValue(forKey: node) } ?? [:]
        for channel in channels.values { channel.close(promise: nil) }
    }

    var connectionCount: Int { table.withLockedValue { $0.total } }

    /// After its listeners closed: every connection goes, then the thread.
    func stop() async {
        let open = table.withLockedValue { t in Array(t.unproven.values) + t.byNode.values.flatMap(\.values) }
        for channel in open { try? await channel.close() }
        try? await group.shutdownGracefully()
    }
    var driverMetrics: BridgeMetrics { driver.metrics }

    // MARK: - Deciding (the core's loop)

    func lookUp(_ capability: String) -> EventLoopFuture<(CanvasGrants.Lookup, upstream: String?)> {
        driver.canvasUse(capability)
    }

    func dialUpstream(on loop: any EventLoop, front: any Channel, filter: CanvasResponseFilter) -> EventLoopFuture<any Channel> {
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(5))
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 << 10))
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(CanvasUpstreamHandler(front: front, filter: filter, relay: self))
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
            logger.warning("canvas relay refused a request: \(reason)\(reason.hasPrefix("canvas") ? " (limits.\(reason))" : "")",
                           metadata: ["peer": "\(PeerAddress.format(peer))", "since": "\(count)"])
        }
    }

    /// Per reason (a fixed set): the first refusal is logged at once, then one line a minute with
    /// the count since, so a flood names every bound it hits without flooding the log.
    struct RefusalSummary {
        var counts: [String: Int] = [:]
        var logged: [String: Moment] = [:]
        mutating func note(_ reason: String, now: Moment) -> Int? {
            counts[reason, default: 0] += 1
            guard now.timeIntervalSince(logged[reason] ?? .distantPast) >= 60 else { return nil }
            defer { (counts[reason], logged[reason]) = (0, now) }
            return counts[reason]
        }
    }
}

/// The LAN side of one relay connection (after TLS).
final class CanvasFrontHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case readingHead([UInt8])
        case deciding
        case relaying(upstream: any Channel, upgrade: Bool)
        case closed
    }

    private let relay: CanvasRelay
    private let id: Int
    private var state = State.readingHead([])
    private var node: Fingerprint?
    private var deadline: Scheduled<Void>?
    /// Client bytes after an upgrade's head, until the upstream socket is up.
    private var early: [ByteBuffer] = []

    init(relay: CanvasRelay, id: Int) {
        (self.relay, self.id) = (relay, id)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        // Slowloris: the whole head within canvasHeadMs of the accept, TLS included.
        deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(relay.configuration.limits.canvasHeadMs))) { [relay] in
            relay.refused("canvasHeadMs", peer: channel.remoteAddress)
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        switch state {
        case var .readingHead(head):
            let limit = relay.configuration.limits.canvasMaxHeaderBytes
            head.append(contentsOf: buffer.readBytes(length: min(buffer.readableBytes, limit + 4 - head.count)) ?? [])
            guard let end = Self.endOfHead(head) else {
                if head.count > limit { return refuse(context, status: 431, reason: "canvasMaxHeaderBytes") }
                state = .readingHead(head)
                return
            }
            if end < head.count || buffer.readableBytes > 0 {
                early.append(ByteBuffer(bytes: head[end...]))
                if buffer.readableBytes > 0 { early.append(buffer) }
            }
            decide(context, head: Array(head[..<end]))
        case .deciding:
            // What arrives while the capability is looked up and the host dialled waits here, and
            // no more than a head's worth of it.
            early.append(buffer)
            if early.reduce(0, { $0 + $1.readableBytes }) > relay.configuration.limits.canvasMaxHeaderBytes {
                refuse(context, status: 431, reason: "canvasMaxHeaderBytes")
            }
        case let .relaying(upstream, upgrade):
            // After a plain request's head, nothing more from the client goes upstream (no
            // pipelining, no smuggling); after an upgrade, everything does.
            guard upgrade else { return }
            upstream.writeAndFlush(buffer, promise: nil)
            // The canvas host reads slowly: stop reading the node until it catches up.
            if !upstream.isWritable { context.channel.setOption(.autoRead, value: false).whenFailure { _ in } }
        case .closed:
            break
        }
    }

    private func decide(_ context: ChannelHandlerContext, head: [UInt8]) {
        let request: CanvasRequest
        do { request = try CanvasRequest(head: head) } catch {
            return refuse(context, status: 404, reason: error.reason)
        }
        state = .deciding
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay.lookUp(request.capability).hop(to: context.eventLoop).whenComplete { result in
            let (handler, context) = bound.value
            guard case .deciding = handler.state else { return }
            switch result {
            case .success((.granted(let node), let upstream)):
                handler.forward(context, request, node: node, upstreamCapability: upstream)
            case .success((.rateLimited, _)):
                handler.refuse(context, status: 429, reason: "canvasRequestsPerMinute")
            case .success((.expired, _)):
                handler.refuse(context, status: 404, reason: "expired_capability")
            case .success((.unknown, _)), .failure:
                handler.refuse(context, status: 404, reason: "unknown_capability")
            }
        }
    }

    private func forward(_ context: ChannelHandlerContext, _ request: CanvasRequest, node: Fingerprint, upstreamCapability: String?) {
        guard relay.proven(id, node: node) else { return refuse(context, status: 429, reason: "canvasConnectionsPerNode") }
        self.node = node
        if upstreamCapability == nil, relay.configuration.upstreamNeedsCapability {
            return refuse(context, status: 503, reason: "no_upstream_capability")
        }
        deadline?.cancel()
        let limits = relay.configuration.limits
        if !request.upgrade {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(limits.canvasRequestMs))) { [relay] in
                relay.refused("canvasRequestMs", peer: channel.remoteAddress)
                channel.close(promise: nil)
            }
        }
        let filter = CanvasResponseFilter(upstream: upstreamCapability, replacement: request.capability,
                                          maxBytes: request.upgrade ? Int.max : limits.canvasMaxResponseBytes)
        let head = request.upstreamHead(host: relay.configuration.upstream.hostHeader, upstreamCapability: upstreamCapability)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay.dialUpstream(on: context.eventLoop, front: context.channel, filter: filter).whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case let .success(upstream):
                guard case .deciding = handler.state else { return upstream.close(promise: nil) }
                handler.state = .relaying(upstream: upstream, upgrade: request.upgrade)
                upstream.write(ByteBuffer(string: head), promise: nil)
                if request.upgrade { for early in handler.early { upstream.write(early, promise: nil) } }
                handler.early = []
                upstream.flush()
                handler.relay.driverMetrics.canvasRelayed()
            case .failure:
                handler.refuse(context, status: 502, reason: "upstream_unreachable")
            }
        }
    }

    /// A short, fixed answer; the connection closes after it. Nothing went upstream.
    private func refuse(_ context: ChannelHandlerContext, status: Int, reason: String) {
        relay.refused(reason, peer: context.channel.remoteAddress)
        state = .closed
        deadline?.cancel()
        let text = switch status {
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 502: "Bad Gateway"
        default: "Service Unavailable"
        }
        let body = "\(text)\n"
        let response = "HTTP/1.1 \(status) \(text)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n" + body
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response))).whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The LAN reader is slow: stop reading from the canvas host until it catches up.
        if case let .relaying(upstream, _) = state { upstream.setOption(.autoRead, value: context.channel.isWritable).whenFailure { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            // A live-reload socket is quiet until a page changes; it lives as long as the capability.
            if case .relaying(_, upgrade: true) = state { return }
            relay.refused("canvasIdleMs", peer: context.channel.remoteAddress)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        if case let .relaying(upstream, _) = state { upstream.close(promise: nil) }
        state = .closed
        relay.closed(id, node: node)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i] == 0x0A && bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D {
            return i + 1
        }
        return nil
    }
}

/// The canvas host's side: bytes back to the LAN through the filter; reads pause while the LAN
/// side cannot take more.
final class CanvasUpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let front: any Channel
    private var filter: CanvasResponseFilter
    private let relay: CanvasRelay

    init(front: any Channel, filter: CanvasResponseFilter, relay: CanvasRelay) {
        (self.front, self.filter, self.relay) = (front, filter, relay)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        // Most reads pass as they came: one buffer, not copied.
        if buffer.withUnsafeReadableBytes({ filter.passesUnchanged($0) }) {
            front.write(buffer, promise: nil)
            return
        }
        switch filter.pass(buffer.readBytes(length: buffer.readableBytes) ?? []) {
        case let .pass(bytes):
            if !bytes.isEmpty { front.write(ByteBuffer(bytes: bytes), promise: nil) }
        case let .cut(reason):
            relay.refused(reason, peer: front.remoteAddress)
            context.close(promise: nil)
            front.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        front.flush()
        if !front.isWritable { context.channel.setOption(.autoRead, value: false).whenFailure { _ in } }
    }

    /// Caught up with what the node sent (a live-reload socket's frames): read the node again.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { front.setOption(.autoRead, value: true).whenFailure { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let rest = filter.finish()
        if !rest.isEmpty { front.write(ByteBuffer(bytes: rest), promise: nil) }
        front.writeAndFlush(ByteBuffer()).whenComplete { [front] _ in front.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
