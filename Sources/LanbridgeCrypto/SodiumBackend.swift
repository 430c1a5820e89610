#if Sodium
    import CSodium

    /// The primitives on libsodium. It is initialised once, on first use.
    enum SodiumBackend: CryptoBackend {
        static let name = "libsodium"

        private static let initialised: Bool = {
            // 0 = initialised now, 1 = already initialised, -1 = failure (no entropy source).
            sodium_init() >= 0
        }()

        @inline(__always)
        private static func ready() {
            precondition(initialised, "libsodium failed to initialise (no entropy source?)")
        }

        static func x25519PublicKey(secret: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            ready()
            _ = crypto_scalarmult_curve25519_base(out.bindMemory(to: UInt8.self).baseAddress!, secret.bindMemory(to: UInt8.self).baseAddress!)
        }

        static func x25519(secret: UnsafeRawBufferPointer, public: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
            ready()
            return crypto_scalarmult_curve25519(
                out.bindMemory(to: UInt8.self).baseAddress!, secret.bindMemory(to: UInt8.self).baseAddress!,
                `public`.bindMemory(to: UInt8.self).baseAddress!) == 0
        }

        static func seal(
            key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
            text: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
        ) {
            ready()
            let region = text.bindMemory(to: UInt8.self)
            withTextPointer(region) { base in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                    base, tag.bindMemory(to: UInt8.self).baseAddress!, nil,
                    base, UInt64(region.count),
                    ad.bindMemory(to: UInt8.self).baseAddress, UInt64(ad.count),
                    nil, nonce.bindMemory(to: UInt8.self).baseAddress!, key.bindMemory(to: UInt8.self).baseAddress!)
            }
        }

        /// libsodium wants a pointer even for an empty message.
        private static func withTextPointer<R>(_ region: UnsafeMutableBufferPointer<UInt8>, _ body: (UnsafeMutablePointer<UInt8>) -> R) -> R {
            if let base = region.baseAddress { return body(base) }
            var empty: UInt8 = 0
            return withUnsafeMutablePointer(to: &empty, body)
        }

        static func open(
            key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, ad: UnsafeRawBufferPointer,
            text: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer
        ) -> Bool {
            ready()
            let region = text.bindMemory(to: UInt8.self)
            return withTextPointer(region) { base in
                crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                    base, nil,
                    base, UInt64(region.count),
                    tag.bindMemory(to: UInt8.self).baseAddress!,
                    ad.bindMemory(to: UInt8.self).baseAddress, UInt64(ad.count),
                    nonce.bindMemory(to: UInt8.self).baseAddress!, key.bindMemory(to: UInt8.self).baseAddress!) == 0
            }
        }

        static func sha256(_ parts: [any ContiguousByteStorage]) -> [UInt8] {
            ready()
            var state = crypto_hash_sha256_state()
            crypto_hash_sha256_init(&state)
            for part in parts {
                part.withUnsafeBytes { _ = crypto_hash_sha256_update(&state, $0.bindMemory(to: UInt8.self).baseAddress, UInt64($0.count)) }
            }
            var out = [UInt8](repeating: 0, count: 32)
            crypto_hash_sha256_final(&state, &out)
            withUnsafeMutableBytes(of: &state) { SecureMemory.wipe($0) }
            return out
        }

        static func hmacSHA256(key: UnsafeRawBufferPointer, _ parts: [any ContiguousByteStorage], into out: UnsafeMutableRawBufferPointer) {
            ready()
            var state = crypto_auth_hmacsha256_state()
            // An empty key is legal HMAC; libsodium still wants a valid pointer.
            withUnsafeBytes(of: UInt8(0)) { empty in
                _ = crypto_auth_hmacsha256_init(&state, (key.count > 0 ? key : empty).bindMemory(to: UInt8.self).baseAddress!, key.count)
            }
            for part in parts {
                part.withUnsafeBytes { _ = crypto_auth_hmacsha256_update(&state, $0.bindMemory(to: UInt8.self).baseAddress, UInt64($0.count)) }
            }
            crypto_auth_hmacsha256_final(&state, out.bindMemory(to: UInt8.self).baseAddress!)
            withUnsafeMutableBytes(of: &state) { SecureMemory.wipe($0) }
        }

        static func randomBytes(into out: UnsafeMutableRawBufferPointer) {
            ready()
            if let base = out.baseAddress { randombytes_buf(base, out.count) }
        }

        static func ed25519PublicKey(seed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            withExpandedKey(seed) { _ in
            } publicKey: {
                out.copyMemory(from: $0)
            }
        }

        static func ed25519Sign(seed: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
            withExpandedKey(seed) { secret in
                _ = crypto_sign_detached(
                    out.bindMemory(to: UInt8.self).baseAddress!, nil,
                    message.bindMemory(to: UInt8.self).baseAddress, UInt64(message.count), secret)
            } publicKey: { _ in
            }
        }

        static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer) -> Bool {
            ready()
            guard publicKey.count == 32, signature.count == 64 else { return false }
            return crypto_sign_verify_detached(
                signature.bindMemory(to: UInt8.self).baseAddress!, message.bindMemory(to: UInt8.self).baseAddress,
                UInt64(message.count), publicKey.bindMemory(to: UInt8.self).baseAddress!) == 0
        }

        /// libsodium's 64-byte signing key (seed and public key) from the seed, wiped after `body`.
        private static func withExpandedKey(
            _ seed: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> Void,
            publicKey: (UnsafeRawBufferPointer) -> Void
        ) {
            ready()
            var pk = [UInt8](repeating: 0, count: 32)
            let sk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)
            defer { SecureMemory.wipe(sk); sk.deallocate() }
            _ = crypto_sign_seed_keypair(&pk, sk.bindMemory(to: UInt8.self).baseAddress!, seed.bindMemory(to: UInt8.self).baseAddress!)
            body(UnsafePointer(sk.bindMemory(to: UInt8.self).baseAddress!))
            pk.withUnsafeBytes(publicKey)
        }
    }
#endif
