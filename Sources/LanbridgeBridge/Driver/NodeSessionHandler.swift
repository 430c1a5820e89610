import LanbridgeNet
import LanbridgeTransport
import NIOCore

/// The top of a node's channel: hands the bridge driver the handshake's result, each decrypted
/// message and the close, on the channel's (and the driver's) event loop. No task, no stream.
final class NodeSessionHandler: ChannelInboundHandler {
    typealias InboundIn = SecureChannelInbound

    private let driver: BridgeDriver
    private let id: ConnectionID
    private let address: String
    private var established = false

    init(driver: BridgeDriver, id: ConnectionID, address: String) {
        (self.driver, self.id, self.address) = (driver, id, address)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .established(result):
            established = true
            driver.metrics.handshake(completed: true)
            driver.established(id, result, address: address, peer: PeerAddress.format(context.channel.remoteAddress))
        case let .message(bytes):
            driver.received(bytes, from: id)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !established { driver.metrics.handshake(completed: false) }
        driver.closed(id)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // SecureChannelHandler has logged it and is closing the channel.
        context.close(promise: nil)
    }
}
