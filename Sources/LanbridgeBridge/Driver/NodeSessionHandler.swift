import LanbridgeNet
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeTransport
import NIOCore

/// What a node's channel tells the relay; `BridgeDriver` in the daemon.
protocol NodeSessionDriver: AnyObject {
    var metrics: BridgeMetrics { get }
    func established(_ id: ConnectionID, _ handshake: SecureSession.HandshakeResult, address: String, peer: String)
    func submit(_ event: BridgeEvent, order: BridgeDriver.Order)
    /// Reads a large message away from the relay loop; the outcome comes back on it.
    func check(_ bytes: [UInt8]) -> EventLoopFuture<SessionMessages.Checked>
    func closed(_ id: ConnectionID)
}

/// The top of a node's channel: hands the bridge driver the handshake's result, each decrypted
/// message and the close, on the channel's (and the driver's) event loop. No task, no stream.
///
/// A large message is read on a worker thread (`BridgeDriver.check`), so no node holds the relay
/// loop for the length of a 16 MiB result. Meanwhile this connection stops reading and holds
/// whatever else it already decrypted: the node's messages still reach the core in the order
/// they were sent, its close last.
final class NodeSessionHandler: ChannelDuplexHandler {
    typealias InboundIn = SecureChannelInbound
    typealias OutboundIn = NodeOutbound  // passed down untouched to `NodeOutbox`

    private let driver: any NodeSessionDriver
    private let id: ConnectionID
    private let address: String
    private var established = false

    /// A message being read off the loop, and what arrived after it.
    private var checking = false
    /// Rarely used: one slot until then (an empty literal reserves 16, about 500 bytes a node).
    private var later = CircularBuffer<SecureChannelInbound>(initialCapacity: 1)
    private var readWanted = false
    private var closedWhileChecking = false

    init(driver: any NodeSessionDriver, id: ConnectionID, address: String) {
        (self.driver, self.id, self.address) = (driver, id, address)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let inbound = unwrapInboundIn(data)
        if checking { return later.append(inbound) }
        deliver(inbound, context: context)
    }

    private func deliver(_ inbound: SecureChannelInbound, context: ChannelHandlerContext) {
        switch inbound {
        case let .established(result):
            established = true
            driver.metrics.handshake(completed: true)
            driver.established(id, result, address: address, peer: PeerAddress.format(context.channel.remoteAddress))
        case let .message(bytes) where bytes.count >= BridgeDriver.offLoopBytes:
            checking = true
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            driver.check(bytes).whenSuccess { checked in
                let (handler, context) = loopBound.value
                handler.driver.submit(.receivedRead(checked, size: bytes.count, from: handler.id), order: .inOrder)
                handler.checked(context: context)
            }
        case let .message(bytes):
            driver.submit(.received(bytes, from: id), order: .inOrder)
        }
    }

    /// The large message is in the core: what waited behind it goes on, then reading resumes.
    private func checked(context: ChannelHandlerContext) {
        checking = false
        while !checking, let next = later.popFirst() { deliver(next, context: context) }
        guard !checking else { return }
        if closedWhileChecking {
            driver.closed(id)
        } else if readWanted {
            readWanted = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if checking { readWanted = true } else { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !established { driver.metrics.handshake(completed: false) }
        if checking { closedWhileChecking = true } else { driver.closed(id) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // SecureChannelHandler has logged it and is closing the channel.
        context.close(promise: nil)
    }
}
