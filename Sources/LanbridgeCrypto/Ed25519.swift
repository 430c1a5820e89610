/// Ed25519 signatures (RFC 8032): the identity lanbridge holds for each node at an OpenClaw
/// gateway, which authenticates devices by signing its challenge. Noise does not use it.
public enum Ed25519 {
    public static let seedLength = 32
    public static let publicKeyLength = 32
    public static let signatureLength = 64

    /// A signing key: the 32-byte seed in wiped memory, and its public key.
    public struct KeyPair: Sendable {
        public let seed: SecureBytes
        public let publicKey: [UInt8]

        public init(seed: SecureBytes) throws {
            guard seed.count == seedLength else { throw CryptoError.invalidKeyLength(expected: seedLength, got: seed.count) }
            self.seed = seed
            var key = [UInt8](repeating: 0, count: publicKeyLength)
            seed.withUnsafeBytes { s in key.withUnsafeMutableBytes { Backend.ed25519PublicKey(seed: s, into: $0) } }
            publicKey = key
        }

        public static func generate() -> KeyPair {
            // Any 32 random bytes are a seed, and these are 32: the init cannot throw here.
            try! KeyPair(seed: .random(count: seedLength))
        }

        /// The 64-byte signature of `message`.
        public func sign(_ message: some ContiguousByteStorage) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: signatureLength)
            seed.withUnsafeBytes { s in
                message.withUnsafeBytes { m in signature.withUnsafeMutableBytes { Backend.ed25519Sign(seed: s, message: m, into: $0) } }
            }
            return signature
        }
    }

    /// Whether `signature` is `publicKey`'s signature of `message`.
    public static func verify(signature: [UInt8], of message: some ContiguousByteStorage, publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureLength, publicKey.count == publicKeyLength else { return false }
        return publicKey.withUnsafeBytes { k in
            message.withUnsafeBytes { m in signature.withUnsafeBytes { Backend.ed25519Verify(publicKey: k, message: m, signature: $0) } }
        }
    }
}
