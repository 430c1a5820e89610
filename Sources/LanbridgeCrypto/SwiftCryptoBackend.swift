#if SwiftCrypto && !Sodium
    import Crypto
    #if canImport(FoundationEssentials)
        import FoundationEssentials
    #else
        import Foundation
    #endif

    /// The primitives on swift-crypto (CryptoKit on Apple platforms, BoringSSL elsewhere).
    enum SwiftCryptoBackend: CryptoBackend {
        static let name = "swift-crypto"

        static func x25519PublicKey(secret: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            // A 32-byte string is always a valid X25519 private key: this cannot throw.
            guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secret) else { preconditionFailure("X25519 key of \(secret.count) bytes") }
            key.publicKey.rawRepresentation.withUnsafeBytes { out.copyMemory(from: $0) }
        }

        static func x25519(secret: UnsafeRawBufferPointer, public: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
            guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secret),
                let peer = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: `public`),
                let shared = try? key.sharedSecretFromKeyAgreement(with: peer)
            else { return false }
            shared.withUnsafeBytes { out.copyMemory(from: $0) }
            return out.contains { $0 != 0 }  // CryptoKit does not refuse a low-order point itself
        }

        static func seal(
            key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
            text: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
        ) {
            guard
                let box = try? Crypto.ChaChaPoly.seal(
                    UnsafeRawBufferPointer(text), using: SymmetricKey(data: key),
                    nonce: Crypto.ChaChaPoly.Nonce(data: nonce), authenticating: ad)
            else { preconditionFailure("ChaChaPoly.seal with a 32-byte key and a 12-byte nonce failed") }
            box.ciphertext.withUnsafeBytes { text.copyMemory(from: $0) }
            box.tag.withUnsafeBytes { tag.copyMemory(from: $0) }
        }

        static func open(
            key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
            text: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer
        ) -> Bool {
            guard let box = try? Crypto.ChaChaPoly.SealedBox(nonce: Crypto.ChaChaPoly.Nonce(data: nonce), ciphertext: UnsafeRawBufferPointer(text), tag: tag),
                let plaintext = try? Crypto.ChaChaPoly.open(box, using: SymmetricKey(data: key), authenticating: ad)
            else { return false }
            plaintext.withUnsafeBytes { text.copyMemory(from: $0) }
            return true
        }

        static func sha256(_ parts: [any ContiguousByteStorage]) -> [UInt8] {
            var hasher = Crypto.SHA256()
            for part in parts { part.withUnsafeBytes { hasher.update(bufferPointer: $0) } }
            return Array(hasher.finalize())
        }

        static func hmacSHA256(key: UnsafeRawBufferPointer, _ parts: [any ContiguousByteStorage], into out: UnsafeMutableRawBufferPointer) {
            var mac = HMAC<Crypto.SHA256>(key: SymmetricKey(data: key))
            for part in parts { part.withUnsafeBytes { mac.update(data: $0) } }
            mac.finalize().withUnsafeBytes { out.copyMemory(from: $0) }
        }

        static func randomBytes(into out: UnsafeMutableRawBufferPointer) {
            var generator = SystemRandomNumberGenerator()  // the system's CSPRNG (getrandom, arc4random)
            for index in out.indices { out[index] = UInt8.random(in: .min ... .max, using: &generator) }
        }

        static func ed25519PublicKey(seed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            signingKey(seed).publicKey.rawRepresentation.withUnsafeBytes { out.copyMemory(from: $0) }
        }

        static func ed25519Sign(seed: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            // BoringSSL signs deterministically (RFC 8032); CryptoKit on Apple platforms randomises:
            // both verify the same.
            guard let signature = try? signingKey(seed).signature(for: message) else { preconditionFailure("Ed25519 signing failed") }
            signature.withUnsafeBytes { out.copyMemory(from: $0) }
        }

        static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer) -> Bool {
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
            return key.isValidSignature(signature, for: message)
        }

        private static func signingKey(_ seed: UnsafeRawBufferPointer) -> Curve25519.Signing.PrivateKey {
            // Any 32 bytes are a valid seed: this cannot throw.
            guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed) else { preconditionFailure("Ed25519 seed of \(seed.count) bytes") }
            return key
        }
    }
#endif
