import LanbridgeNet
import LanbridgeProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// The top of the gateway link's channel, after the WebSocket upgrade: `bridge.hello` first, then
/// frames both ways between the gateway and the bridge driver, on the driver's event loop.
///
/// Backpressure: while the gateway does not read what the bridge writes (the channel is not
/// writable), the bridge stops reading the gateway's requests, so the answers it owes stay
/// bounded; answers are never dropped. Events are not queued behind a stalled link: they are
/// counted and the count is sent once the link drains (`bridge.events-dropped`).
final class GatewayLinkHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Why the link ended, for the redial loop's log line.
    final class Ending: Sendable {
        private let reason = NIOLockedValueBox<String?>(nil)
        func set(_ why: String) { reason.withLockedValue { $0 = $0 ?? why } }
        var value: String? { reason.withLockedValue { $0 } }
    }

    let generation: Int
    let driver: BridgeDriver
    private let hello: JSONValue
    private let ending: Ending
    private let logger: Logger
    private var context: ChannelHandlerContext?
    /// The frame writer's place in the pipeline: finished frames go in there.
    private var frameWriter: ChannelHandlerContext?
    private var readHeld = false
    private var droppedEvents = 0
    private var closeSent = false
    private var maskingKeys = MaskingKeys()

    init(driver: BridgeDriver, generation: Int, hello: JSONValue, ending: Ending, logger: Logger) {
        (self.driver, self.generation, self.hello, self.ending, self.logger) = (driver, generation, hello, ending, logger)
    }

    /// Frames that arrived before `start`, handled right after the hello.
    private var early: [WebSocketFrame] = []
    private var started = false
    private var inactive = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    /// The upgrade is complete and the HTTP handlers are gone: the hello goes out first, and only
    /// then does the driver learn of the link, so nothing can come before it.
    func start() {
        // Submitted from the dialling task, so it can run after the channel has already gone
        // inactive: a dead link must never be announced as up (healthz ok, calls waiting 30 s).
        guard let context, !started, !inactive, context.channel.isActive else { return }
        started = true
        send([ArraySlice(GatewayFrame.event(name: GatewayMethod.helloEvent, payload: hello).encoded())])
        driver.gatewayUp(self)
        for frame in early { handle(frame, context: context) }
        early.removeAll()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        frameWriter = nil
    }

    // MARK: - Bridge → gateway

    /// Answers and the bridge's calls always go out; events are dropped, and counted, while the
    /// gateway is not reading.
    func send(_ frame: GatewayFrame, flush: Bool = true) {
        guard let context else { return }
        if case .event = frame, !context.channel.isWritable {
            droppedEvents += 1
            return
        }
        send([ArraySlice(frame.encoded())], flush: flush)
    }

    /// An answer, spliced from parts (a node's result is passed on as the bytes it arrived in).
    /// Unflushed when the driver batches: it flushes once it has carried out the loop's events.
    ///
    /// The parts are masked straight into the finished frame, which goes in below the frame
    /// writer: one copy of a node's result between its session and the gateway's socket.
    func send(_ parts: [ArraySlice<UInt8>], flush: Bool = true) {
        guard let context else { return }
        let maskKey = maskingKeys.key()
        if frameWriter == nil { frameWriter = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameWriter.self) }
        guard let below = frameWriter else {
            // No frame writer below (NIO's own encoder, say): the frame as a value, for it to encode.
            var buffer = context.channel.allocator.buffer(capacity: parts.reduce(0) { $0 + $1.count })
            for part in parts { buffer.writeBytes(part) }
            let frame = wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: maskKey, data: buffer))
            if flush { context.writeAndFlush(frame, promise: nil) } else { context.write(frame, promise: nil) }
            return
        }
        below.write(NIOAny(WebSocketFrameWriter.textFrame(parts, maskKey: maskKey, allocator: context.channel.allocator)), promise: nil)
        if flush { context.flush() }
    }

    func flush() {
        context?.flush()
    }

    /// Ends the link with a close frame (the token was rotated).
    func close(reason: String) {
        guard let context else { return }
        sendClose(code: .goingAway, reason: reason, context: context)
        context.close(promise: nil)
    }

    private func sendClose(code: WebSocketErrorCode, reason: String, context: ChannelHandlerContext) {
        guard !closeSent else { return }
        closeSent = true
        context.writeAndFlush(wrapOutboundOut(.close(code, reason: reason, maskKey: maskingKeys.key())), promise: nil)
    }

    // MARK: - Gateway → bridge

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard started else { return early.append(frame) }
        handle(frame, context: context)
    }

    private func handle(_ frame: WebSocketFrame, context: ChannelHandlerContext) {
        switch frame.opcode {
        case .text, .binary:
            received(Array(buffer: frame.unmaskedData))
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: maskingKeys.key(), data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            ending.set(frame.closeError?.description ?? "the gateway closed the link")
            sendClose(code: .normalClosure, reason: "", context: context)
            context.close(promise: nil)
        default:
            break
        }
    }

    /// One reader decides the frame (`GatewayFrame.decode`); a bad one is answered if it had an ID.
    private func received(_ bytes: [UInt8]) {
        let frame: GatewayFrame
        do throws(GatewayFrame.DecodingError) { frame = try GatewayFrame.decode(bytes) } catch {
            logger.notice("bad frame from the gateway: \(error)")
            if let id = error.requestID {
                send(GatewayFrame.response(id: id, answer: .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: error.description))))
            }
            return
        }
        driver.gatewayFrame(frame, generation: generation)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        ending.set("the gateway closed the link")
        driver.gatewayDown(generation)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ending.set("\(error)")
        context.close(promise: nil)
    }

    // MARK: - Backpressure

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable { context.read() } else { readHeld = true }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            if droppedEvents > 0 {
                driver.submit(.gatewayDrained(generation: generation, droppedEvents: droppedEvents))
                droppedEvents = 0
            }
            if readHeld {
                readHeld = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }
}
