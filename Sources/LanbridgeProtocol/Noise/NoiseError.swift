/// Everything that can go wrong inside the Noise framework (spec rev 34).
public enum NoiseError: Error, Equatable, CustomStringConvertible {
    case unsupportedProtocol(String)
    case missingKey(String)
    case messageTooLong(Int)
    case messageTooShort(expected: Int, got: Int)
    case decryptionFailed
    case weakPublicKey
    case nonceExhausted
    case handshakeAlreadyComplete
    case notYourTurn
    case handshakeNotComplete

    public var description: String {
        switch self {
        case let .unsupportedProtocol(name): "unsupported Noise protocol \(name)"
        case let .missingKey(which): "handshake needs the \(which) key"
        case let .messageTooLong(n): "Noise message of \(n) bytes exceeds \(Noise.maxMessageLength)"
        case let .messageTooShort(expected, got): "handshake message too short: expected at least \(expected) bytes, got \(got)"
        case .decryptionFailed: "decryption failed (wrong key, tampered, replayed or out-of-order message)"
        case .weakPublicKey: "peer sent a low-order public key"
        case .nonceExhausted: "cipher nonce exhausted; the session must be replaced"
        case .handshakeAlreadyComplete: "handshake already complete"
        case .notYourTurn: "handshake message out of turn"
        case .handshakeNotComplete: "handshake not complete"
        }
    }
}

/// Constants of the `25519_ChaChaPoly_SHA256` suite, named after the spec.
public enum Noise {
    /// Every Noise message, handshake or transport, is at most 65535 bytes (spec §3).
    public static let maxMessageLength = 65535
    /// DHLEN for 25519.
    public static let dhLength = 32
    /// HASHLEN for SHA256.
    public static let hashLength = 32
    /// Length of the AEAD tag appended by ChaChaPoly.
    public static let tagLength = 16
    public static let pskLength = 32
}
