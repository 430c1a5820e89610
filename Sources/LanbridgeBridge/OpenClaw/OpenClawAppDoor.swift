import LanbridgeCrypto
import LanbridgeCore
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import LanbridgeTransport
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The second front door (issue 38): OpenClaw's own node apps connect here as they would to an
/// OpenClaw gateway (wss on the root path, the bridge's stable self-signed certificate), and
/// become lanbridge nodes: the same admission policy as the Noise listener (one per address, one in
/// all), the same core, rules, fast-fail, audit and revocation. The app's session ends here
/// (`OpenClawAppSession`); toward the gateway the node goes the way every node does.
enum OpenClawAppDoor {
    static let preAuthBytes = 64 << 10

    struct Options {
        /// nil: plain ws (only where the operator opted in, on a private address).
        var tls: DoorTLS?
        var idleTimeout: TimeAmount
        var maxFrameBytes: Int
        /// Descriptors a connection holds once paired: two with OpenClaw's gateway (its socket there).
        var descriptorsEach = 1
    }

    /// The door's own thread, as the canvas relay has: TLS handshakes and the apps' frames never
    /// run on the core's loop, so a flood at the door delays no invoke beyond sharing the CPU.
    /// Made on first use, for the process's life (as NIO's own singleton group is).
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static func bind(host: String, port: Int, listener: Int, options: Options, admission: Admission, driver: BridgeDriver, logger: Logger) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                admit(channel, listener: listener, options: options, admission: admission, driver: driver, logger: logger)
            }
            .bind(host: host, port: port).get()
    }

    /// Admitted (or refused) as a node's connection is, then given its connection ID by the
    /// driver (a hop to its loop) before any byte is read.
    private static func admit(_ channel: any Channel, listener: Int, options: Options, admission: Admission, driver: BridgeDriver, logger: Logger)
        -> EventLoopFuture<Void>
    {
        let address = channel.remoteAddress?.ipAddress ?? "?"
        guard case let .admit(slot, _, handshakeTimeout) = admission.connection(from: address, listener: listener, close: { channel.close(promise: nil) }) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        let ticket = driver.descriptors?.admit(channel, peer: DescriptorGate.peer(of: channel.remoteAddress), cost: options.descriptorsEach)
        if driver.descriptors != nil, ticket == nil {
            admission.release(slot)
            channel.close(promise: nil)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        let accepted: EventLoopFuture<ConnectionID> = driver.loop.submit { driver.accepted(channel, slot: slot, ticket: ticket, app: true) }
        return accepted.hop(to: channel.eventLoop).flatMapThrowing { (id: ConnectionID) in
            channel.closeFuture.whenComplete { _ in driver.closed(id) }
            try pipeline(channel, id: id, address: address, handshakeTimeout: handshakeTimeout, options: options, driver: driver, logger: logger)
        }
    }

    private static func pipeline(
        _ channel: any Channel, id: ConnectionID, address: String, handshakeTimeout: Double, options: Options, driver: BridgeDriver, logger: Logger
    ) throws {
        // TLS, the upgrade and the connect within the admission's deadline, like a Noise handshake.
        let deadline = channel.eventLoop.scheduleTask(in: .interval(handshakeTimeout)) { channel.close(promise: nil) }
        let sync = channel.pipeline.syncOperations
        // The certificate this connection is served is the one its request records (a rotation
        // meanwhile changes the next connection's, not this one's).
        let served = options.tls?.served
        if let served { try sync.addHandler(NIOSSLServerHandler(context: served.context)) }
        // Before a device has proved itself, what it may make the bridge hold is small: the
        // upgrade and the connect fit in 64 KiB (OpenClaw's own pre-auth cap), whatever frame size
        // a paired app may use later.
        try sync.addHandler(PreAuthLimit(bytes: OpenClawAppDoor.preAuthBytes))
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: options.maxFrameBytes,
            shouldUpgrade: { channel, head in
                // The gateway's socket is on the root path; nothing else is served here.
                channel.eventLoop.makeSucceededFuture(head.uri == "/" || head.uri.hasPrefix("/?") ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024,
                            maxAccumulatedFrameSize: options.maxFrameBytes))
                    try sync.addHandler(IdleStateHandler(readTimeout: options.idleTimeout))
                    try sync.addHandler(
                        OpenClawAppHandler(
                            driver: driver, id: id, address: address, tlsSha256: served?.sha256,
                            deadline: deadline, logger: logger))
                }
            })
        // Plain HTTP requests reach `NotUpgraded`, which goes once the upgrade is done (before the
        // first WebSocket byte is passed on): it must never see one.
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    _ = try? context.pipeline.syncOperations.removeHandler(name: NotUpgraded.name)
                }
            ))
        try sync.addHandler(NotUpgraded(), name: NotUpgraded.name)
    }

    /// A request that is not the WebSocket upgrade: 404, then close.
    private final class NotUpgraded: ChannelInboundHandler, RemovableChannelHandler {
        static let name = "openclaw-apps-not-upgraded"
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head = unwrapInboundIn(data) else { return }
            var headers = HTTPHeaders([("Content-Length", "0"), ("Connection", "close")])
            headers.add(name: "Cache-Control", value: "no-store")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        }
    }
}

/// Closes a connection that sends more than `bytes` before it is let in; lifted (and out of the
/// way) once the app's device is paired and its session is up.
final class PreAuthLimit: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Any
    struct Lift: Sendable {}

    private var left: Int
    init(bytes: Int) { left = bytes }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        left -= unwrapInboundIn(data).readableBytes
        guard left >= 0 else {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Lift else { return context.triggerUserOutboundEvent(event, promise: promise) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        promise?.succeed()
    }
}

/// What the driver writes to an app's channel: the core's message to its node, as it decided it
/// (not encoded for a Noise session, to be decoded again here).
struct AppOutbound: @unchecked Sendable {
    var message: any SessionMessage
}

/// One app's socket, after the upgrade, on the door's own thread: frames in and out of its
/// `OpenClawAppSession`, the core's messages to its node translated for it.
final class OpenClawAppHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = AppOutbound
    typealias OutboundOut = WebSocketFrame

    private let driver: BridgeDriver
    private let id: ConnectionID
    private let address: String
    private let tlsSha256: String?
    private let deadline: Scheduled<Void>
    private let logger: Logger
    private var session: OpenClawAppSession
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    private var closing = false
    private var loggedUnknown = false

    init(driver: BridgeDriver, id: ConnectionID, address: String, tlsSha256: String?, deadline: Scheduled<Void>, logger: Logger) {
        (self.driver, self.id, self.address, self.tlsSha256, self.deadline, self.logger) = (driver, id, address, tlsSha256, deadline, logger)
        session = OpenClawAppSession(nonce: Base64URL.encode(SecureRandom.bytes(16)), nowMs: Self.unixMs)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        perform(session.start(nowMs: Self.unixMs))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    /// The challenge's `ts` and the signature window are wall-clock milliseconds (the app signs with its own clock).
    static var unixMs: Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            let actions = session.received(Array(buffer: frame.unmaskedData), binary: frame.opcode == .binary, nowMs: Self.unixMs)
            let wasReady = session.isReady
            perform(actions)
            if !wasReady, session.device != nil { deadline.cancel() }
            if session.unknown > 0, !loggedUnknown {
                loggedUnknown = true
                logger.notice(
                    "an OpenClaw app called a method lanbridge does not relay (answered INVALID_REQUEST; counted once per connection)",
                    metadata: ["peer": "\(address)", "connection": "\(id)"])
            }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            closing = true
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: context.channel.allocator.buffer(capacity: 0))))
                .whenComplete { _ in context.close(promise: nil) }
        default:
            break
        }
    }

    /// The core's message to this node, translated.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let message = unwrapOutboundIn(data).message
        let wasReady = session.isReady
        let actions = session.fromBridge(message, nowMs: Self.unixMs)
        if message is Invoke {
            // What the app is sent for an invoke, as a node's invoke is counted by its encoded size.
            let bytes = actions.reduce(0) { if case let .send(frame, _) = $1 { $0 + frame.count } else { $0 } }
            driver.metrics.relayed(bytes: bytes, toGateway: false)
        }
        perform(actions)
        // Paired and up: the app may now send what any node may (results up to the result limit).
        if !wasReady, session.isReady { context.triggerUserOutboundEvent(PreAuthLimit.Lift(), promise: nil) }
        promise?.succeed()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event {
            logger.notice("closing an OpenClaw app's socket: silent past the idle timeout", metadata: ["peer": "\(address)"])
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func perform(_ actions: [OpenClawAppSession.Action]) {
        guard let context else { return }
        for action in actions {
            switch action {
            case let .send(bytes, binary):
                guard !closing else { continue }
                context.writeAndFlush(
                    wrapOutboundOut(WebSocketFrame(fin: true, opcode: binary ? .binary : .text, data: context.channel.allocator.buffer(bytes: bytes))),
                    promise: nil)
            case let .authenticated(device):
                driver.appEstablished(id, device, tlsSha256: tlsSha256, address: address, peer: PeerAddress.format(context.channel.remoteAddress))
            case let .toBridge(bytes):
                driver.submit(.received(bytes, from: id))
            case let .close(code, reason):
                guard !closing else { continue }
                closing = true
                var body = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
                body.writeInteger(code)
                body.writeString(String(reason.prefix(120)))
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: body)))
                    .whenComplete { _ in context.close(promise: nil) }
            }
        }
        arm()
    }

    private func arm() {
        guard let context, !closing, let due = session.nextDeadlineMs else { return }
        timer?.cancel()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .milliseconds(max(0, due - Self.unixMs))) {
            let handler = bound.value
            handler.perform(handler.session.timer(nowMs: Self.unixMs))
        }
    }
}
