import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Writes outbound frames as NIO's `WebSocketFrameEncoder` does (RFC 6455 §5.2), but masks while
/// it copies, eight bytes at a time, into one buffer with the header. NIO masks byte by byte in
/// place, after a copy-on-write: for a 16 MB result on its way to the gateway that held the relay
/// loop for tens of milliseconds (issue 21's bystander figure).
public final class WebSocketFrameWriter: ChannelOutboundHandler {
    public typealias OutboundIn = WebSocketFrame
    public typealias OutboundOut = ByteBuffer

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        let extensionBytes = frame.extensionData?.readableBytes ?? 0
        let length = extensionBytes + frame.data.readableBytes
        var out = context.channel.allocator.buffer(capacity: 14 + length)
        out.writeInteger((frame.fin ? 0x80 : 0) | frame.reservedBits.rawValue | UInt8(webSocketOpcode: frame.opcode))
        let maskBit: UInt8 = frame.maskKey == nil ? 0 : 0x80
        switch length {
        case ..<126: out.writeInteger(UInt8(length) | maskBit)
        case ...Int(UInt16.max): out.writeInteger(126 | maskBit); out.writeInteger(UInt16(length))
        default: out.writeInteger(127 | maskBit); out.writeInteger(UInt64(length))
        }
        if let key = frame.maskKey {
            out.writeBytes(key)
            var offset = 0
            if let ext = frame.extensionData { offset = Self.write(ext, maskedWith: key, at: offset, into: &out) }
            _ = Self.write(frame.data, maskedWith: key, at: offset, into: &out)
        } else {
            if let ext = frame.extensionData { out.writeImmutableBuffer(ext) }
            out.writeImmutableBuffer(frame.data)
        }
        context.write(wrapOutboundOut(out), promise: promise)
    }

    /// Appends `source` XORed with `key` (continuing at byte `offset` of the key's cycle); returns
    /// the next offset.
    static func write(_ source: ByteBuffer, maskedWith key: WebSocketMaskingKey, at offset: Int, into out: inout ByteBuffer) -> Int {
        let count = source.readableBytes
        guard count > 0 else { return offset }
        let rotated = (0..<4).map { key[($0 + offset) % 4] }
        let word32 = rotated.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        let word = UInt64(word32) | UInt64(word32) << 32
        source.withUnsafeReadableBytes { input in
            _ = out.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { output in
                var i = 0
                while i + 8 <= count {
                    output.storeBytes(of: input.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ word, toByteOffset: i, as: UInt64.self)
                    i += 8
                }
                while i < count {
                    output[i] = input[i] ^ rotated[i % 4]
                    i += 1
                }
                return count
            }
        }
        return (offset + count) % 4
    }
}

/// NIO's client upgrader for the handshake (the key, the accept check), with `WebSocketFrameWriter`
/// in place of NIO's encoder after it.
struct WebSocketClientUpgrader<UpgradeResult: Sendable>: NIOTypedHTTPClientProtocolUpgrader {
    private let inner: NIOTypedWebSocketClientUpgrader<UpgradeResult>
    private let maxFrameSize: Int
    private let upgradePipelineHandler: @Sendable (any Channel, HTTPResponseHead) -> EventLoopFuture<UpgradeResult>

    init(maxFrameSize: Int, upgradePipelineHandler: @escaping @Sendable (any Channel, HTTPResponseHead) -> EventLoopFuture<UpgradeResult>) {
        inner = NIOTypedWebSocketClientUpgrader(maxFrameSize: maxFrameSize, upgradePipelineHandler: upgradePipelineHandler)
        (self.maxFrameSize, self.upgradePipelineHandler) = (maxFrameSize, upgradePipelineHandler)
    }

    var supportedProtocol: String { inner.supportedProtocol }
    var requiredUpgradeHeaders: [String] { inner.requiredUpgradeHeaders }
    func addCustom(upgradeRequestHeaders: inout HTTPHeaders) { inner.addCustom(upgradeRequestHeaders: &upgradeRequestHeaders) }
    func shouldAllowUpgrade(upgradeResponse: HTTPResponseHead) -> Bool { inner.shouldAllowUpgrade(upgradeResponse: upgradeResponse) }

    func upgrade(channel: any Channel, upgradeResponse: HTTPResponseHead) -> EventLoopFuture<UpgradeResult> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(WebSocketFrameWriter())
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)))
            try channel.pipeline.syncOperations.addHandler(WebSocketProtocolErrorHandler(isServer: false))
        }.flatMap { upgradePipelineHandler(channel, upgradeResponse) }
    }
}
