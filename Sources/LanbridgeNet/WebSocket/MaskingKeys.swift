import LanbridgeCrypto
import NIOWebSocket

/// Mask keys for a client's frames (RFC 6455 §5.3: from a strong source of entropy), drawn from
/// one buffer of random bytes refilled 1,024 keys at a time: `WebSocketMaskingKey.random()` costs
/// a `getrandom` system call per frame, one in eight of the relay's system calls per invoke.
/// One per link, used on its event loop.
public struct MaskingKeys {
    private static let keysPerRefill = 1024
    private var pool: [UInt8] = []
    private var next = 0

    public init() {}

    public mutating func key() -> WebSocketMaskingKey {
        if next == pool.count {
            pool = SecureRandom.bytes(Self.keysPerRefill * 4)
            next = 0
        }
        defer { next += 4 }
        // Four bytes always make a key; the fallback is never taken.
        return WebSocketMaskingKey(pool[next..<next + 4]) ?? .random()
    }
}
