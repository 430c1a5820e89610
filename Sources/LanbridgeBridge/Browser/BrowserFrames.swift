import NIOCore
import NIOWebSocket

/// The browser door's framing (issue 64): one WebSocket binary message is one lanbridge frame
/// (PROTOCOL.md §3) without its two length bytes. Inbound it gives `SecureChannelHandler` the frame
/// as the wire would carry it; outbound it turns each frame the session writes into one binary
/// message. Anything but unfragmented binary messages (and pings and the close) ends the connection.
final class BrowserFrames: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    /// Bytes of frames the session wrote but a write has not completed into whole frames yet.
    private var pending: ByteBuffer?
    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .binary where frame.fin:
            let body = frame.unmaskedData
            guard (1...0xFFFF).contains(body.readableBytes) else { return close(context, code: .messageTooLarge) }
            var framed = context.channel.allocator.buffer(capacity: body.readableBytes + 2)
            framed.writeInteger(UInt16(body.readableBytes))
            framed.writeImmutableBuffer(body)
            context.fireChannelRead(wrapInboundOut(framed))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            close(context, code: .normalClosure)
        default:
            close(context, code: .unacceptableData)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        if var earlier = pending {
            earlier.writeBuffer(&buffer)
            buffer = earlier
            pending = nil
        }
        var messages: [ByteBuffer] = []
        while let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self), buffer.readableBytes >= 2 + Int(length) {
            buffer.moveReaderIndex(forwardBy: 2)
            if let body = buffer.readSlice(length: Int(length)) { messages.append(body) }
        }
        if buffer.readableBytes > 0 { pending = buffer }
        guard let last = messages.popLast() else {
            promise?.succeed()
            return
        }
        for body in messages { context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: body)), promise: nil) }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: last)), promise: promise)
    }

    private func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
    }
}
