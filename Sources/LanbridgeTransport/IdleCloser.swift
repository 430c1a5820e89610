import Logging
import NIOCore

/// Closes a connection that has been silent past the idle timeout (pings keep live ones talking).
public final class IdleCloser: ChannelInboundHandler, Sendable {
    public typealias InboundIn = ByteBuffer
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event {
            logger.notice("closing connection: silent past the idle timeout", metadata: ["peer": "\(PeerAddress.format(context.channel.remoteAddress))"])
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
