/// Why a secure session was closed. Every case is a logged reason, never a crash.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    case badPreamble(String)
    case noCommonVersion(offered: VersionRange, supported: VersionRange)
    case unknownInvite
    case frameTooLarge(length: Int, limit: Int)
    case frameTooShort(length: Int)
    case truncatedFrame(received: Int, expected: Int)
    case handshakeFailed(NoiseError)
    case unexpectedHandshakePayload(String)
    /// A transport frame failed authentication: tampered, replayed, reordered or under the wrong key.
    case decryptionFailed
    case badChunkFlag(UInt8)
    case messageTooLarge(size: Int, limit: Int)
    case peerClosedDuringHandshake
    case notEstablished
    case closed

    public var description: String {
        switch self {
        case let .badPreamble(why): "bad preamble: \(why)"
        case let .noCommonVersion(offered, supported): "no common protocol version (peer offers \(offered), we speak \(supported))"
        case .unknownInvite: "unknown, used or expired invite"
        case let .frameTooLarge(length, limit): "frame of \(length) bytes exceeds the \(limit)-byte limit"
        case let .frameTooShort(length): "frame of \(length) bytes is too short"
        case let .truncatedFrame(received, expected): "connection ended mid-frame (\(received) of \(expected) bytes)"
        case let .handshakeFailed(error): "handshake failed: \(error)"
        case let .unexpectedHandshakePayload(why): "unexpected handshake payload: \(why)"
        case .decryptionFailed: "frame failed authentication (tampered, replayed or out of order)"
        case let .badChunkFlag(flag): "unknown chunk flag 0x\(String(flag, radix: 16))"
        case let .messageTooLarge(size, limit): "message of \(size)+ bytes exceeds the \(limit)-byte limit"
        case .peerClosedDuringHandshake: "peer closed the connection during the handshake"
        case .notEstablished: "session not established"
        case .closed: "session already closed"
        }
    }
}

public struct TransportLimits: Sendable, Equatable {
    /// Before the peer is authorised (handshake, pairing), frames and messages stay this small.
    public static let preAuthorization = 8 * 1024
    /// Default for authorised peers: large enough for canvas snapshots.
    public static let defaultMaxMessageSize = 16 * 1024 * 1024

    public var maxMessageSize: Int

    public init(maxMessageSize: Int = defaultMaxMessageSize) {
        self.maxMessageSize = maxMessageSize
    }
}
