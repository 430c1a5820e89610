import LanbridgeNet
import LanbridgeProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// The top of one node's socket at an OpenClaw gateway, after the WebSocket upgrade: runs the
/// node's `OpenClawNodeSession` on the driver's event loop and carries its actions out (frames to
/// the gateway; invokes, tokens and state to `OpenClawLinks`).
final class OpenClawLinkHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// How the socket ended, for the redial loop.
    final class Ending: Sendable {
        private let box = NIOLockedValueBox<(reason: String, retry: OpenClawNodeSession.Retry)?>(nil)
        func set(_ reason: String, _ retry: OpenClawNodeSession.Retry = .backoff) { box.withLockedValue { $0 = $0 ?? (reason, retry) } }
        var value: (reason: String, retry: OpenClawNodeSession.Retry) { box.withLockedValue { $0 } ?? ("the gateway closed the socket", .backoff) }
    }

    let node: Fingerprint
    /// Which of the node's links this socket belongs to (`OpenClawLinks` numbers them): a socket
    /// of an earlier link, finishing late, must not take over or clear the current one.
    let linkToken: Int
    private var session: OpenClawNodeSession
    private let links: OpenClawLinks
    private let ending: Ending
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var closeSent = false
    private var maskingKeys = MaskingKeys()
    /// Asked to re-offer while invokes were in flight: closes once they are answered.
    private var reofferWhenIdle = false
    /// Completed once the session is up or the socket is gone: the dialler's handshake slot is free.
    private let handshake: EventLoopPromise<Void>

    init(
        node: Fingerprint, linkToken: Int, session: OpenClawNodeSession, links: OpenClawLinks, ending: Ending, handshake: EventLoopPromise<Void>,
        logger: Logger
    ) {
        (self.node, self.linkToken, self.session, self.links, self.ending, self.handshake, self.logger) = (node, linkToken, session, links, ending, handshake, logger)
    }

    static var nowMs: Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard links.attach(self) else {
            // The node left (or came back on a newer link) while this socket was being dialled.
            ending.set("superseded by a newer link")
            return context.close(promise: nil)
        }
        arm()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    // MARK: - From the bridge

    func nodeAnswered(_ invokeID: String, _ answer: Result<InvokePayload, ErrorMessage>) {
        perform(session.nodeAnswered(invokeId: invokeID, answer))
    }

    func nodeForeground(_ foreground: Bool) {
        perform(session.nodeForeground(foreground))
    }

    func nodeEvent(_ event: String, payload: JSONValue, tag: String?) {
        perform(session.nodeEvent(event, payload: payload, tag: tag))
    }

    /// Ask the gateway for a fresh canvas capability for this socket; it comes back as `links.canvas`.
    func refreshCanvas() {
        perform(session.refreshCanvas(nowMs: Self.nowMs))
    }

    /// Up, and not closing: a node's call sent now gets its answer on this socket.
    var isReady: Bool { session.isReady && !closeSent }

    /// Reconnects to offer the node's current commands (they changed, or an approval at the gateway
    /// takes effect only on a new connect), as soon as nothing is in flight.
    func reoffer() {
        guard session.isReady else { return }  // a socket still dialling gets the new set when up
        reofferWhenIdle = true
        perform([])
    }

    var deviceId: String { session.configuration.device.deviceId }
    var protocolVersion: Int { session.protocolVersion }

    // MARK: - From the gateway

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            logger.trace("frame from the OpenClaw gateway", metadata: ["node": "\(node)", "bytes": "\(frame.length)"])
            perform(session.received(Array(buffer: frame.unmaskedData), nowMs: Self.nowMs))
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: maskingKeys.key(), data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            ending.set(frame.closeError?.description ?? "the gateway closed the socket")
            sendClose(.normalClosure, "")
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        ending.set("the gateway closed the socket")
        handshake.succeed()
        links.detach(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ending.set("\(error)")
        context.close(promise: nil)
    }

    // MARK: - Carrying the session's actions out

    private func perform(_ actions: [OpenClawNodeSession.Action]) {
        for action in actions {
            switch action {
            case let .send(bytes):
                guard let context else { return }
                let buffer = context.channel.allocator.buffer(bytes: bytes)
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: maskingKeys.key(), data: buffer)), promise: nil)
            case let .connected(version):
                handshake.succeed()
                links.sessionUp(self, protocolVersion: version, deviceId: deviceId, offered: session.configuration.commands)
            case let .storeDeviceToken(token):
                links.store(deviceToken: token, for: node)
            case let .invoke(invoke):
                links.invoke(invoke, on: node, from: self)
            case let .cancel(invokeID):
                logger.info("the gateway cancelled an invoke", metadata: ["node": "\(node)", "invoke": "\(invokeID)"])
                links.cancel(invokeID, on: node)
            case let .eventAnswered(tag, result):
                links.eventAnswered(tag, result)
            case let .canvasCapability(capability):
                links.canvas(capability, from: self)
            case let .queueAcknowledged(count, remaining):
                logger.info(
                    "ran what the OpenClaw gateway queued while the node was in the background",
                    metadata: ["node": "\(node)", "acknowledged": "\(count)", "stillQueued": "\(remaining)"])
            case let .close(reason, retry):
                ending.set(reason, retry)
                sendClose(.policyViolation, "")
                context?.close(promise: nil)
            }
        }
        if reofferWhenIdle, session.isIdle, context != nil {
            reofferWhenIdle = false
            ending.set("re-offering the node's commands", .reoffer)
            sendClose(.normalClosure, "")
            context?.close(promise: nil)
        }
        arm()
    }

    private func arm() {
        guard let context, let deadline = session.nextDeadlineMs else { return }
        timer?.cancel()
        let delay = TimeAmount.milliseconds(max(0, deadline - Self.nowMs))
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: delay) {
            let handler = loopBound.value
            handler.perform(handler.session.timer(nowMs: Self.nowMs))
        }
    }

    private func sendClose(_ code: WebSocketErrorCode, _ reason: String) {
        guard let context, !closeSent else { return }
        closeSent = true
        context.writeAndFlush(wrapOutboundOut(.close(code, reason: reason, maskKey: maskingKeys.key())), promise: nil)
    }
}
