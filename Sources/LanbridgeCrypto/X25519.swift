public enum CryptoError: Error, Equatable, CustomStringConvertible {
    case invalidKeyLength(expected: Int, got: Int)
    /// The DH result was all zeros: the peer sent a low-order point.
    case weakPublicKey
    case authenticationFailed

    public var description: String {
        switch self {
        case let .invalidKeyLength(expected, got): "key must be \(expected) bytes, got \(got)"
        case .weakPublicKey: "peer public key is a low-order point"
        case .authenticationFailed: "authentication tag did not verify"
        }
    }
}

/// Curve25519 Diffie-Hellman (RFC 7748), on the build's crypto backend.
public enum X25519 {
    public static let keyLength = 32

    /// A long-term or ephemeral key pair. The private half lives in wiped memory.
    public struct KeyPair: Sendable {
        public let privateKey: SecureBytes
        public let publicKey: [UInt8]

        public init(privateKey: SecureBytes) throws {
            guard privateKey.count == keyLength else {
                throw CryptoError.invalidKeyLength(expected: keyLength, got: privateKey.count)
            }
            self.privateKey = privateKey
            self.publicKey = X25519.publicKey(for: privateKey)
        }

        public static func generate() -> KeyPair {
            // A random 32-byte string is a valid X25519 private key (it is clamped on use).
            try! KeyPair(privateKey: .random(count: keyLength))
        }
    }

    public static func publicKey(for privateKey: SecureBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: keyLength)
        privateKey.withUnsafeBytes { sk in out.withUnsafeMutableBytes { Backend.x25519PublicKey(secret: sk, into: $0) } }
        return out
    }

    /// DH(privateKey, publicKey). The result is secret.
    public static func sharedSecret(_ privateKey: SecureBytes, _ publicKey: some ContiguousByteStorage) throws -> SecureBytes {
        let pkCount = publicKey.withUnsafeBytes { $0.count }
        guard pkCount == keyLength else { throw CryptoError.invalidKeyLength(expected: keyLength, got: pkCount) }
        return try SecureBytes(count: keyLength) { out in
            let ok = privateKey.withUnsafeBytes { sk in publicKey.withUnsafeBytes { pk in Backend.x25519(secret: sk, public: pk, into: out) } }
            if !ok { throw CryptoError.weakPublicKey }
        }
    }
}
