import LanbridgeCrypto

/// The 6-digit code both screens show during pairing (numeric comparison, as in Bluetooth SSP).
///
/// The node commits to its nonce before it sees the bridge's, so a man in the middle, who runs two
/// handshakes with two different handshake hashes, cannot grind keys or nonces until the codes match:
/// each attempt succeeds with probability 10⁻⁶.
///   1. node → bridge: commitment = SHA-256("lanbridge-pairing-commit-v1" || h || Nn)
///   2. bridge → node: Nb
///   3. node → bridge: Nn   (the bridge checks the commitment)
///   code = BE64(HMAC-SHA-256(key: h, "lanbridge-pairing-code-v1" || Nn || Nb)[0..<8]) mod 10⁶, zero-padded
public enum VerificationCode {
    public static let nonceLength = 32
    static let commitLabel = Array("lanbridge-pairing-commit-v1".utf8)
    static let codeLabel = Array("lanbridge-pairing-code-v1".utf8)

    public static func commitment(handshakeHash: [UInt8], nodeNonce: [UInt8]) -> [UInt8] {
        SHA256.hash(commitLabel, handshakeHash, nodeNonce)
    }

    /// Constant-time check of a revealed nonce against its commitment.
    public static func verify(commitment: [UInt8], handshakeHash: [UInt8], nodeNonce: [UInt8]) -> Bool {
        SecureMemory.constantTimeEqual(commitment, Self.commitment(handshakeHash: handshakeHash, nodeNonce: nodeNonce))
    }

    public static func code(handshakeHash: [UInt8], nodeNonce: [UInt8], bridgeNonce: [UInt8]) -> String {
        let mac = HMACSHA256.authenticate(key: handshakeHash, codeLabel, nodeNonce, bridgeNonce)
        let value = mac.withUnsafeBytes { raw in raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        let digits = String(value % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
