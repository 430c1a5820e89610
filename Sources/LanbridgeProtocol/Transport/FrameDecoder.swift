/// Splits a TCP byte stream into frames: a 2-byte big-endian length, then that many bytes.
///
/// The length is checked against `limit` as soon as the 2-byte header arrives, before any body is
/// buffered, so a peer can never make us hold more than `limit` + 1 bytes of one frame.
public struct FrameDecoder: Sendable {
    public static let headerLength = 2
    public var limit: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    public init(limit: Int) {
        self.limit = limit
    }

    public mutating func append(_ bytes: [UInt8]) {
        if buffer.isEmpty { buffer = bytes } else { buffer += bytes }
    }

    /// Copies what the socket delivered in: the one copy a received byte makes before decryption.
    public mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or nil when more bytes are needed.
    public mutating func next() throws -> [UInt8]? {
        try nextInPlace { buffer, range in Array(buffer[range]) }
    }

    /// The next complete frame, handed to `body` where it lies (`buffer[range]`, the decoder's to
    /// overwrite: a transport frame is decrypted there), or nil when more bytes are needed.
    public mutating func nextInPlace<R>(_ body: (inout [UInt8], Range<Int>) throws -> R) throws -> R? {
        compactIfWorthIt()
        let available = buffer.count - readIndex
        guard available >= Self.headerLength else { return nil }
        let length = Int(buffer[readIndex]) << 8 | Int(buffer[readIndex + 1])
        guard length <= limit else { throw TransportError.frameTooLarge(length: length, limit: limit) }
        guard length > 0 else { throw TransportError.frameTooShort(length: 0) }
        guard available >= Self.headerLength + length else { return nil }
        let start = readIndex + Self.headerLength
        readIndex = start + length
        return try body(&buffer, start..<start + length)
    }

    /// Call when the peer closes: a partial frame left behind is a truncation.
    public func finish() throws {
        let available = buffer.count - readIndex
        guard available > 0 else { return }
        let expected =
            available >= Self.headerLength
            ? Self.headerLength + (Int(buffer[readIndex]) << 8 | Int(buffer[readIndex + 1]))
            : Self.headerLength
        throw TransportError.truncatedFrame(received: available, expected: expected)
    }

    private mutating func compactIfWorthIt() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex > 64 * 1024, readIndex * 2 > buffer.count {
            // Only once the consumed part dominates: amortised O(1) per byte, never a memmove per frame.
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// Prefixes `body` with its 2-byte length.
    public static func frame(_ body: [UInt8]) -> [UInt8] {
        precondition(body.count <= Noise.maxMessageLength && !body.isEmpty)
        return [UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }
}
