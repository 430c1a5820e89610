import NIOCore

/// The browser door's first byte decides what a connection is: a TLS handshake (a record of type
/// 22) gets the shell's pipeline; anything else is plain HTTP, which gets only the bridge CA's
/// install page and the root's downloads (a phone must trust the root before it can open the
/// shell at all). The pipeline is built behind this handler, which then steps aside.
final class PlainOrTLS: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let tls: (ChannelPipeline.SynchronousOperations) throws -> Void
    private let plain: (ChannelPipeline.SynchronousOperations) throws -> Void
    private var decided = false

    init(tls: @escaping (ChannelPipeline.SynchronousOperations) throws -> Void, plain: @escaping (ChannelPipeline.SynchronousOperations) throws -> Void) {
        (self.tls, self.plain) = (tls, plain)
    }

    /// Silent past the idle bound before its first byte: nothing behind this handler yet to close it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !decided, event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else { return context.fireChannelRead(data) }
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        decided = true
        do {
            try (first == 0x16 ? tls : plain)(context.pipeline.syncOperations)
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
