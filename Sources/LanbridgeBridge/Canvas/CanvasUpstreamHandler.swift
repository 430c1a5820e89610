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

/// The canvas host's side: every read goes to the node's handler (on the same loop), which decides.
final class CanvasUpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let front: CanvasFrontHandler

    init(front: CanvasFrontHandler) {
        self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        front.fromHost(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        front.hostReadComplete(context.channel)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { front.hostWritable() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        front.hostClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
