import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeTransport
import Logging
import NIOCore
import NIOPosix

/// How a `NodeClient` reaches a bridge: TCP with the Noise session (`TCPNodeTransport`, the
/// default), or an in-memory bridge in an app's tests (`FakeBridge` in `LanbridgeNodeTesting`).
///
/// The client does everything above the secure session (pairing, pin checks, invokes) itself,
/// whatever the transport, so a test through a fake runs the same code as the app in the field.
public protocol NodeTransport: Sendable {
    /// Opens a connection to the bridge at `host:port` as `identity` (with the invite's
    /// pre-shared key when given) and returns it once it is open. The handshake's outcome arrives
    /// as the connection's first event.
    func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?) async throws -> NodeConnection

    /// The same, with the event loop the client runs on: a transport on SwiftNIO opens its channel
    /// there, so the client's reads and writes need no thread hop. Others ignore it (the default).
    func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?, on eventLoop: any EventLoop) async throws -> NodeConnection
}

extension NodeTransport {
    /// By default a transport ignores the client's event loop.
    public func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?, on eventLoop: any EventLoop) async throws -> NodeConnection {
        try await connect(host: host, port: port, identity: identity, invite: invite)
    }
}

/// What a connection delivers to the client, in order.
public enum NodeTransportEvent: Sendable {
    /// The secure session is up: the bridge's static key and the handshake hash (which the
    /// pairing code is derived from, PROTOCOL.md §9.2).
    case established(bridgeKey: [UInt8], handshakeHash: [UInt8])
    /// One application message from the bridge, still encoded: the client decodes it.
    case message([UInt8])
}

/// One open connection to a bridge, as a transport hands it to the client.
public struct NodeConnection: Sendable {
    /// The connection's events; the stream ends when the connection closes.
    public let events: AsyncThrowingStream<NodeTransportEvent, any Error>
    private let sendMessage: @Sendable ([UInt8]) async throws -> Void
    private let authorizeSession: @Sendable () async throws -> Void
    private let closeConnection: @Sendable () -> Void

    /// A connection from its parts: `send` writes one encoded message, `authorize` tells the
    /// transport the bridge accepted this node (a TCP session lifts its pre-pairing size limits),
    /// `close` ends it (and must end `events`).
    public init(
        events: AsyncThrowingStream<NodeTransportEvent, any Error>,
        send: @escaping @Sendable ([UInt8]) async throws -> Void,
        authorize: @escaping @Sendable () async throws -> Void = {},
        close: @escaping @Sendable () -> Void
    ) {
        self.events = events
        (sendMessage, authorizeSession, closeConnection) = (send, authorize, close)
    }

    /// Sends one encoded application message.
    public func send(_ message: [UInt8]) async throws { try await sendMessage(message) }
    /// The bridge accepted this node: lift the limits kept while unauthenticated.
    public func authorize() async throws { try await authorizeSession() }
    /// Closes the connection (idempotent).
    public func close() { closeConnection() }
}

/// The transport apps use: TCP to the bridge, the Noise session of PROTOCOL.md §4 on SwiftNIO.
public struct TCPNodeTransport: NodeTransport {
    /// How long to wait for the TCP connect.
    public var connectTimeout: Duration
    /// A connection that receives nothing for this long is closed (the bridge pings every 15 s).
    public var readTimeout: Duration
    private let logger: Logger

    /// A transport with the given limits.
    public init(
        connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(45),
        logger: Logger = Logger(label: "lanbridge.node")
    ) {
        (self.connectTimeout, self.readTimeout, self.logger) = (connectTimeout, readTimeout, logger)
    }

    /// Connects and starts the Noise handshake (XX, or XXpsk3 with the invite).
    public func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?) async throws -> NodeConnection {
        try await connect(host: host, port: port, identity: identity, invite: invite, on: MultiThreadedEventLoopGroup.singleton.next())
    }

    /// Connects on `eventLoop` (the client's own, so a message and its answer stay on one thread).
    public func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?, on eventLoop: any EventLoop) async throws -> NodeConnection {
        let sessionInvite = invite.map { SecureSession.Invite(secret: SecureBytes(copying: $0.secret)) }
        let (session, opening) = try SecureSession.initiate(with: identity, invite: sessionInvite)
        let (events, continuation) = AsyncThrowingStream.makeStream(of: NodeTransportEvent.self, throwing: (any Error).self)
        let (logger, readTimeout) = (self.logger, TimeAmount(readTimeout))
        let channel = try await ClientBootstrap(group: eventLoop)
            .connectTimeout(TimeAmount(connectTimeout))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: readTimeout))
                    try sync.addHandler(IdleCloser(logger: logger))
                    try sync.addHandler(SecureChannelHandler(initiator: session, opening: opening, logger: logger))
                    try sync.addHandler(EventForwarder(continuation))
                }
            }
            .connect(host: host, port: port).get()
        continuation.onTermination = { _ in channel.close(promise: nil) }
        return NodeConnection(
            events: events,
            send: { bytes in try await channel.writeAndFlush(bytes) },
            authorize: { try await channel.triggerUserOutboundEvent(SecureChannelHandler.Authorize()).get() },
            close: { channel.close(promise: nil) })
    }

    /// Hands the secure session's output to the client's stream. The stream is not bounded: what
    /// arrives is bounded by the bridge, which keeps at most its `maxConcurrentInvokes` in flight
    /// per node and pings every 15 s.
    private final class EventForwarder: ChannelInboundHandler, Sendable {
        typealias InboundIn = SecureChannelInbound
        private let continuation: AsyncThrowingStream<NodeTransportEvent, any Error>.Continuation

        init(_ continuation: AsyncThrowingStream<NodeTransportEvent, any Error>.Continuation) {
            self.continuation = continuation
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .established(result):
                continuation.yield(.established(bridgeKey: result.remoteStaticKey, handshakeHash: result.handshakeHash))
            case let .message(bytes):
                continuation.yield(.message(bytes))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            continuation.finish(throwing: error)
            context.close(promise: nil)
        }
    }
}
