import LanbridgeProtocol
import Logging
import NIOCore

/// Runs a `SecureSession` on a NIO channel: wire bytes below, whole application messages above.
///
/// Inbound it emits each decrypted message as a `ByteBuffer`, and `SecureChannelEvent.established`
/// once the handshake completes. Outbound it takes application messages as `ByteBuffer`s.
/// Every protocol error is logged with its reason and closes the connection.
public final class SecureChannelHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Send through `triggerUserOutboundEvent` once the peer is trusted, to lift the small limits.
    public struct Authorize: Sendable {
        public init() {}
    }

    private var session: SecureSession
    private let opening: [UInt8]?
    private var logger: Logger

    /// Bridge side: waits for the node's preamble.
    public init(responder session: SecureSession, logger: Logger) {
        precondition(session.role == .responder)
        self.session = session
        opening = nil
        self.logger = logger
    }

    /// Node side: `opening` is what `SecureSession.initiate` returned, sent when the channel becomes active.
    public init(initiator session: SecureSession, opening: [UInt8], logger: Logger) {
        precondition(session.role == .initiator)
        self.session = session
        self.opening = opening
        self.logger = logger
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if let remote = context.channel.remoteAddress { logger[metadataKey: "peer"] = "\(remote)" }
        if context.channel.isActive { sendOpening(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        if let remote = context.channel.remoteAddress { logger[metadataKey: "peer"] = "\(remote)" }
        sendOpening(context: context)
        context.fireChannelActive()
    }

    private var openingSent = false
    private func sendOpening(context: ChannelHandlerContext) {
        guard let opening, !openingSent else { return }
        openingSent = true
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: opening)), promise: nil)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        let outputs: [SecureSession.Output]
        do {
            outputs = try session.receive(bytes)
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
                logger.debug("secure session established", metadata: ["remote": "\(result.remoteFingerprint)", "version": "\(result.version)"])
                context.fireUserInboundEventTriggered(SecureChannelEvent.established(result))
            case let .message(message):
                context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: message)))
            }
        }
        if wrote { context.flush() }
    }

    public func channelInactive(context: ChannelHandlerContext) {
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
        var buffer = unwrapOutboundIn(data)
        do {
            let frames = try session.sealFrames(buffer.readBytes(length: buffer.readableBytes) ?? [])
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

public enum SecureChannelEvent: Sendable {
    case established(SecureSession.HandshakeResult)
}
