import NIOCore
import NIOWebSocket

/// The close handshake (RFC 6455 §5.5.1), written and read in one place for every WebSocket the
/// bridge speaks: the async connection, the gateway link and the OpenClaw sockets.
extension WebSocketFrame {
    /// A close frame with `code` and `reason` (clients pass a masking key).
    public static func close(_ code: WebSocketErrorCode, reason: String = "", maskKey: WebSocketMaskingKey? = nil) -> WebSocketFrame {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        return WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: maskKey, data: data)
    }

    /// Why the peer's close frame ended the connection: nil for a normal closure (1000, or no
    /// code), else the error that says which code and reason.
    public var closeError: WebSocketError? {
        var data = unmaskedData
        guard let code = data.readWebSocketErrorCode(), code != .normalClosure else { return nil }
        return .closed(code: "\(UInt16(webSocketErrorCode: code))", reason: data.readString(length: data.readableBytes) ?? "")
    }
}
