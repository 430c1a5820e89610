/// Application messages larger than one Noise message travel as chunks.
/// Each transport plaintext is `flag (1) | data`: flag 0x00 = more follows, 0x01 = final chunk.
public enum Chunking {
    public static let more: UInt8 = 0x00
    public static let final: UInt8 = 0x01
    /// 65535 − 16 (tag) − 1 (flag).
    public static let maxChunkData = Noise.maxMessageLength - Noise.tagLength - 1

    /// How `count` message bytes split into chunks: each range, and whether it is the last.
    /// An empty message is one final, empty chunk.
    public static func ranges(forMessageOf count: Int) -> [(range: Range<Int>, isFinal: Bool)] {
        guard count > 0 else { return [(0..<0, true)] }
        return stride(from: 0, to: count, by: maxChunkData).map { start in
            let end = min(start + maxChunkData, count)
            return (start..<end, end == count)
        }
    }
}

/// Reassembles chunks into messages, growing only as data actually arrives: there is no advertised
/// size to trust, and the running total is checked against the limit on every chunk.
public struct MessageAssembler: Sendable {
    public var limit: Int
    private var partial: [UInt8] = []

    public init(limit: Int) {
        self.limit = limit
    }

    /// Adds one decrypted chunk; returns the message when the final chunk arrives.
    public mutating func add(chunk plaintext: [UInt8]) throws -> [UInt8]? {
        try add(chunk: plaintext[...])
    }

    /// The same, from where the chunk was decrypted: its data is copied once, into the message.
    public mutating func add(chunk plaintext: ArraySlice<UInt8>) throws -> [UInt8]? {
        guard let flag = plaintext.first else { throw TransportError.badChunkFlag(0) }
        guard flag == Chunking.more || flag == Chunking.final else { throw TransportError.badChunkFlag(flag) }
        let size = partial.count + plaintext.count - 1
        guard size <= limit else { throw TransportError.messageTooLarge(size: size, limit: limit) }
        if flag == Chunking.final && partial.isEmpty { return Array(plaintext.dropFirst()) }  // one-chunk message
        partial.append(contentsOf: plaintext.dropFirst())
        guard flag == Chunking.final else { return nil }
        defer { partial = [] }
        return partial
    }
}
