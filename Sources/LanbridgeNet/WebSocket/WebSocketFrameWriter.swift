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
        Self.writeHeader(fin: frame.fin, reservedBits: frame.reservedBits, opcode: frame.opcode, length: length, maskKey: frame.maskKey, into: &out)
        if let key = frame.maskKey {
            var offset = 0
            if let ext = frame.extensionData { offset = ext.withUnsafeReadableBytes { Self.write($0, maskedWith: key, at: offset, into: &out) } }
            _ = frame.data.withUnsafeReadableBytes { Self.write($0, maskedWith: key, at: offset, into: &out) }
        } else {
            if let ext = frame.extensionData { out.writeImmutableBuffer(ext) }
            out.writeImmutableBuffer(frame.data)
        }
        context.write(wrapOutboundOut(out), promise: promise)
    }

    /// A whole text frame whose payload is `parts` one after the other, masked while they are
    /// copied in: a node's result reaches the gateway's socket buffer in this one copy. The bytes
    /// are what `write` makes of the same frame; they go in below this handler.
    public static func textFrame(_ parts: [ArraySlice<UInt8>], maskKey: WebSocketMaskingKey?, allocator: ByteBufferAllocator) -> ByteBuffer {
        let length = parts.reduce(0) { $0 + $1.count }
        var out = allocator.buffer(capacity: 14 + length)
        writeHeader(fin: true, reservedBits: [], opcode: .text, length: length, maskKey: maskKey, into: &out)
        var offset = 0
        for part in parts {
            if let key = maskKey {
                offset = part.withUnsafeBytes { write($0, maskedWith: key, at: offset, into: &out) }
            } else {
                out.writeBytes(part)
            }
        }
        return out
    }

    /// The header (RFC 6455 §5.2): flags and opcode, the length in its shortest form, the mask key.
    private static func writeHeader(
        fin: Bool, reservedBits: WebSocketFrame.ReservedBits, opcode: WebSocketOpcode, length: Int,
        maskKey: WebSocketMaskingKey?, into out: inout ByteBuffer
    ) {
        out.writeInteger((fin ? 0x80 : 0) | reservedBits.rawValue | UInt8(webSocketOpcode: opcode))
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        switch length {
        case ..<126: out.writeInteger(UInt8(length) | maskBit)
        case ...Int(UInt16.max): out.writeInteger(126 | maskBit); out.writeInteger(UInt16(length))
        default: out.writeInteger(127 | maskBit); out.writeInteger(UInt64(length))
        }
        if let maskKey { out.writeBytes(maskKey) }
    }

    /// Appends `input` XORed with `key` (continuing at byte `offset` of the key's cycle); returns
    /// the next offset.
    private static func write(_ input: UnsafeRawBufferPointer, maskedWith key: WebSocketMaskingKey, at offset: Int, into out: inout ByteBuffer) -> Int {
        let count = input.count
        guard count > 0 else { return offset }
        let rotated = (0..<4).map { key[($0 + offset) % 4] }
        let word32 = rotated.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        let word = UInt64(word32) | UInt64(word32) << 32
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
