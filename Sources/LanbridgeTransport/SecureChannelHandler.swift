import LanbridgeProtocol
import Logging
import NIOCore

/// Runs a `SecureSession` on a NIO channel: wire bytes below, whole application messages above.
///
/// Inbound it emits `.established` once the handshake completes, then one `.message` per decrypted
/// application message. Outbound it takes application messages as byte arrays. Every protocol
/// error, and a handshake that does not finish in time, is logged with its reason and closes the
/// connection.
public final class SecureChannelHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = SecureChannelInbound
    public typealias OutboundIn = [UInt8]
    public typealias OutboundOut = ByteBuffer

    /// Send through `triggerUserOutboundEvent` once the peer is trusted, to lift the small limits.
    public struct Authorize: Sendable {
        public init() {}
    }

    private var session: SecureSession
    private let opening: [UInt8]?
    private var logger: Logger
    private let handshakeTimeout: TimeAmount?
    private var handshakeDeadline: Scheduled<Void>?
    private var started = false

    /// Bridge side: waits for the node's preamble, and drops it if the handshake takes too long.
    public init(responder session: SecureSession, handshakeTimeout: TimeAmount? = .seconds(5), logger: Logger) {
        precondition(session.role == .responder)
        self.session = session
        opening = nil
        self.handshakeTimeout = handshakeTimeout
        self.logger = logger
    }

    /// Node side: `opening` is what `SecureSession.initiate` returned, sent when the channel becomes active.
    public init(initiator session: SecureSession, opening: [UInt8], handshakeTimeout: TimeAmount? = .seconds(10), logger: Logger) {
        precondition(session.role == .initiator)
        self.session = session
        self.opening = opening
        self.handshakeTimeout = handshakeTimeout
        self.logger = logger
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        logger[metadataKey: "peer"] = "\(PeerAddress.format(context.channel.remoteAddress))"
        if let handshakeTimeout {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            handshakeDeadline = context.eventLoop.scheduleTask(in: handshakeTimeout) { [logger] in
                logger.notice("closing connection: handshake not completed within \(handshakeTimeout)")
                loopBound.value.close(promise: nil)
            }
        }
        if let opening {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: opening)), promise: nil)
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let outputs: [SecureSession.Output]
        do {
            outputs = try buffer.withUnsafeReadableBytes { try session.receive($0) }
        } catch {
            fail(context: context, error)
            return
        }
        var wrote = false
        for output in outputs {
            switch output {
            case let .send(wire):
                context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: wire)), promise: nil)
                wrote = true
            case let .established(result):
                handshakeDeadline?.cancel()
                handshakeDeadline = nil
                logger.debug("secure session established", metadata: ["remote": "\(result.remoteFingerprint)", "version": "\(result.version)"])
                context.fireChannelRead(wrapInboundOut(.established(result)))
            case let .message(message):
                context.fireChannelRead(wrapInboundOut(.message(message)))
            }
        }
        if wrote { context.flush() }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        handshakeDeadline?.cancel()
        do {
            try session.receiveEOF()
        } catch TransportError.closed {
            // Already failed and logged.
        } catch {
            logger.notice("connection closed: \(error)")
        }
        context.fireChannelInactive()
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        do {
            let frames = try session.sealFrames(unwrapOutboundIn(data))
            for frame in frames.dropLast() {
                context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame)), promise: nil)
            }
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: frames.last!)), promise: promise)
        } catch {
            promise?.fail(error)
        }
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Authorize else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        session.authorize()
        promise?.succeed()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, error)
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        logger.notice("closing connection: \(error)")
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

public enum SecureChannelInbound: Sendable {
    /// The handshake finished; always the first thing a channel delivers.
    case established(SecureSession.HandshakeResult)
    /// One decrypted application message.
    case message([UInt8])
}
