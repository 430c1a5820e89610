/// The WebSocket frames of the canvas's live-reload socket (RFC 6455 §5), as the relay reads them
/// after the canvas host has switched protocols. A relay passes a protocol, not bytes: each frame
/// is read whole and checked (masking by direction, reserved bits, opcodes, control frame rules,
/// minimal lengths, size) before anything of it moves on. No extension is ever negotiated (the
/// relay does not pass `Sec-WebSocket-Extensions`), so every reserved bit must be 0.
public struct LiveReloadFrame: Equatable, Sendable {
    public enum Opcode: UInt8, Sendable {
        case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA
        public var isControl: Bool { rawValue >= 0x8 }
    }

    public var fin: Bool
    public var opcode: Opcode
    /// Unmasked.
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: Opcode, payload: [UInt8]) {
        (self.fin, self.opcode, self.payload) = (fin, opcode, payload)
    }

    /// The frame on the wire: masked with `mask` (client to server), or not (server to client).
    public func encoded(mask: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case ..<126: out.append(maskBit | UInt8(payload.count))
        case ..<65536: out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(shift))) }
        }
        guard let mask, mask.count == 4 else { return out + payload }
        out += mask
        out.reserveCapacity(out.count + payload.count)
        for (i, byte) in payload.enumerated() { out.append(byte ^ mask[i & 3]) }
        return out
    }

    /// A close frame with a status code (RFC 6455 §7.4) and a short reason.
    public static func close(code: UInt16, reason: String = "") -> LiveReloadFrame {
        LiveReloadFrame(opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(120)))
    }
}

/// Reads frames from one direction of the socket. Linear in the bytes: a frame's bytes are copied
/// once into the buffer and once out of it.
public struct LiveReloadFrameReader: Sendable {
    public enum Direction: Sendable {
        /// From the node (the client): every frame masked.
        case fromClient
        /// From the canvas host (the server): no frame masked.
        case fromServer
    }

    public struct Violation: Error, Equatable, CustomStringConvertible {
        /// The close code to send (1002 protocol error, 1009 too big).
        public let code: UInt16
        public let reason: String
        public var description: String { reason }
    }

    public let direction: Direction
    public let maxPayload: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(_ direction: Direction, maxPayload: Int) {
        (self.direction, self.maxPayload) = (direction, maxPayload)
    }

    /// Bytes not yet part of a whole frame.
    public var pending: Int { buffer.count - start }

    /// Appends `bytes` and returns every whole frame they complete, in order; a violation ends the
    /// socket (nothing after it is read).
    public mutating func read(_ bytes: [UInt8]) throws(Violation) -> [LiveReloadFrame] {
        if start > 0, start == buffer.count { (buffer, start) = ([], 0) }
        buffer += bytes
        var frames: [LiveReloadFrame] = []
        while let frame = try next() { frames.append(frame) }
        // Drop what was read once it is most of the buffer, so appends stay amortised O(1).
        if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return frames
    }

    private mutating func next() throws(Violation) -> LiveReloadFrame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let b0 = buffer[start], b1 = buffer[start + 1]
        guard b0 & 0x70 == 0 else { throw Violation(code: 1002, reason: "reserved bits set") }
        guard let opcode = LiveReloadFrame.Opcode(rawValue: b0 & 0x0F) else { throw Violation(code: 1002, reason: "unknown opcode") }
        let fin = b0 & 0x80 != 0
        let masked = b1 & 0x80 != 0
        switch (direction, masked) {
        case (.fromClient, false): throw Violation(code: 1002, reason: "an unmasked frame from the client")
        case (.fromServer, true): throw Violation(code: 1002, reason: "a masked frame from the server")
        default: break
        }
        var length = Int(b1 & 0x7F)
        var offset = 2
        if length == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            guard length >= 126 else { throw Violation(code: 1002, reason: "a length not in its shortest form") }
            offset = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            var wide: UInt64 = 0
            for i in 2..<10 { wide = wide << 8 | UInt64(buffer[start + i]) }
            guard wide >> 63 == 0 else { throw Violation(code: 1002, reason: "a length with its top bit set") }
            guard wide >= 65536 else { throw Violation(code: 1002, reason: "a length not in its shortest form") }
            guard wide <= UInt64(maxPayload) else { throw Violation(code: 1009, reason: "a frame over \(maxPayload) bytes") }
            length = Int(wide)
            offset = 10
        }
        if opcode.isControl {
            guard fin else { throw Violation(code: 1002, reason: "a fragmented control frame") }
            guard length <= 125 else { throw Violation(code: 1002, reason: "a control frame over 125 bytes") }
        }
        guard length <= maxPayload else { throw Violation(code: 1009, reason: "a frame over \(maxPayload) bytes") }
        let maskStart = start + offset
        if masked { offset += 4 }
        guard available >= offset + length else { return nil }
        var payload = Array(buffer[(start + offset)..<(start + offset + length)])
        if masked {
            let mask = Array(buffer[maskStart..<(maskStart + 4)])
            for i in payload.indices { payload[i] ^= mask[i & 3] }
        }
        start += offset + length
        return LiveReloadFrame(fin: fin, opcode: opcode, payload: payload)
    }
}
