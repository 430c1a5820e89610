/// The primitives the Noise engine (and the OpenClaw device identity's Ed25519) need, as each crypto backend provides them. The public types
/// of this module (`X25519`, `ChaChaPoly`, `SHA256`, `HMACSHA256`, `SecureRandom`, `SecureBytes`)
/// are written once over this; the package trait picks the backend at build time:
///
/// - `Sodium` (the default): libsodium, what the bridge ships with (`SodiumBackend`).
/// - `SwiftCrypto`: swift-crypto, which is CryptoKit on Apple platforms: what a node app builds
///   with (`SwiftCryptoBackend`). `scripts/test` builds it too and runs the vectors on it.
protocol CryptoBackend {
    /// For logs and tests: "libsodium" or "swift-crypto".
    static var name: String { get }
    /// The X25519 public key of a 32-byte private key.
    static func x25519PublicKey(secret: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
    /// X25519(secret, public) into `out`; false when the result is all zeros (a low-order point).
    static func x25519(secret: UnsafeRawBufferPointer, public: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool
    /// ChaCha20-Poly1305 (RFC 8439): encrypts `text` in place and writes the 16-byte tag.
    static func seal(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
        text: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer)
    /// Verifies `tag` and decrypts `text` in place; false (and `text` unchanged) on any tampering.
    static func open(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
        text: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer
    ) -> Bool
    /// SHA-256 of the concatenation of `parts`.
    static func sha256(_ parts: [any ContiguousByteStorage]) -> [UInt8]
    /// HMAC-SHA-256(key, concatenation of `parts`) into the 32-byte `out`.
    static func hmacSHA256(key: UnsafeRawBufferPointer, _ parts: [any ContiguousByteStorage], into out: UnsafeMutableRawBufferPointer)
    /// Cryptographically secure random bytes.
    static func randomBytes(into out: UnsafeMutableRawBufferPointer)
    /// The Ed25519 public key (32 bytes) of a 32-byte seed (RFC 8032's private key).
    static func ed25519PublicKey(seed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
    /// The 64-byte Ed25519 signature of `message` with the key of `seed`.
    static func ed25519Sign(seed: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
    /// Whether `signature` is `publicKey`'s signature of `message` (false for a malformed key).
    static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer) -> Bool
}

#if Sodium
    typealias Backend = SodiumBackend
#elseif SwiftCrypto
    typealias Backend = SwiftCryptoBackend
#else
    #error("enable the Sodium or the SwiftCrypto trait of the lanbridge package")
#endif

/// Which backend this build uses.
public enum CryptoInfo {
    public static var backend: String { Backend.name }
}
