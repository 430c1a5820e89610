import LanbridgeNet
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// `WebSocketFrameWriter` writes exactly the bytes NIO's `WebSocketFrameEncoder` writes, for every
/// length class, with and without a mask and extension data.
struct WebSocketFrameWriterTests {
    func encoded(_ frame: WebSocketFrame, nio: Bool) throws -> [UInt8] {
        let channel = EmbeddedChannel()
        if nio { try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder()) } else { try channel.pipeline.syncOperations.addHandler(WebSocketFrameWriter()) }
        try channel.writeOutbound(frame)
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        _ = try channel.finish()
        return bytes
    }

    @Test(arguments: [0, 1, 3, 7, 8, 9, 125, 126, 127, 1000, 65535, 65536, 70001])
    func writesWhatNIOsEncoderWrites(length: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let data = ByteBuffer(bytes: (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let extensionData = ByteBuffer(bytes: [1, 2, 3, 4, 5])
        for mask in [nil, WebSocketMaskingKey.random()] {
            for ext in [nil, extensionData] {
                let frame = WebSocketFrame(
                    fin: length % 2 == 0, rsv1: ext != nil, opcode: length == 0 ? .ping : .text,
                    maskKey: mask, data: data, extensionData: ext)
                let ours = try encoded(frame, nio: false), theirs = try encoded(frame, nio: true)
                #expect(
                    ours == theirs,
                    "length \(length), masked \(mask != nil), extension \(ext != nil)")
            }
        }
    }
}

extension WebSocketFrameWriterTests {
    /// A frame spliced from parts (a result's head, payload and tail) is byte for byte the frame
    /// NIO's encoder writes for the parts joined, wherever the parts break the mask's cycle.
    @Test(arguments: [[0], [1, 2, 3], [5, 0, 11], [3, 70000, 1], [126, 0], [8, 8, 8, 9]])
    func aFrameFromPartsIsTheFrameOfTheirBytes(lengths: [Int]) throws {
        var generator = SystemRandomNumberGenerator()
        let parts = lengths.map { n in ArraySlice((0..<n).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        for mask in [nil, WebSocketMaskingKey.random()] {
            let spliced = WebSocketFrameWriter.textFrame(parts, maskKey: mask, allocator: ByteBufferAllocator())
            let joined = WebSocketFrame(fin: true, opcode: .text, maskKey: mask, data: ByteBuffer(bytes: Array(parts.joined())))
            #expect(Array(buffer: spliced) == (try encoded(joined, nio: true)), "parts \(lengths), masked \(mask != nil)")
        }
    }
}

/// Issue 22: mask keys come from a pool refilled 1,024 at a time (one random draw, not one per
/// frame); what it hands out is still the random bytes, four at a time, across refills.
struct MaskingKeysTests {
    @Test func keysAreDrawnFourBytesAtATimeAcrossRefills() {
        var keys = MaskingKeys()
        let drawn = (0..<3000).map { _ in keys.key() }
        let distinct = Set(drawn.map { [$0[0], $0[1], $0[2], $0[3]] })
        // 3,000 draws of 32 random bits: a repeat is possible (p ≈ 0.001), many are not.
        #expect(distinct.count >= 2990)
    }
}
