import CSodium

/// IETF ChaCha20-Poly1305 (RFC 8439), with Noise's nonce layout: 4 zero bytes, then a 64-bit little-endian counter.
public enum ChaChaPoly {
    public static let keyLength = 32
    public static let tagLength = 16

    private static func withNonce<R>(_ n: UInt64, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        var nonce: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &nonce) { raw in
            withUnsafeBytes(of: n.littleEndian) { raw.baseAddress!.advanced(by: 4).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            return body(raw.bindMemory(to: UInt8.self).baseAddress!)
        }
    }

    /// Encrypts `plaintext` and appends the 16-byte tag.
    public static func seal(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, plaintext: some ContiguousByteStorage) -> [UInt8] {
        Sodium.ready()
        let ptCount = plaintext.withUnsafeBytes { $0.count }
        return [UInt8](unsafeUninitializedCapacity: ptCount + tagLength) { out, initialised in
            var written: UInt64 = 0
            withNonce(nonce) { npub in
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in
                        plaintext.withUnsafeBytes { p in
                            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                                out.baseAddress!, &written,
                                p.bindMemory(to: UInt8.self).baseAddress, UInt64(p.count),
                                a.bindMemory(to: UInt8.self).baseAddress, UInt64(a.count),
                                nil, npub, k.bindMemory(to: UInt8.self).baseAddress!)
                        }
                    }
                }
            }
            initialised = Int(written)
        }
    }

    /// Verifies the tag and decrypts; throws `authenticationFailed` on any tampering.
    public static func open(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, ciphertext: some ContiguousByteStorage) throws -> [UInt8] {
        Sodium.ready()
        let ctCount = ciphertext.withUnsafeBytes { $0.count }
        guard ctCount >= tagLength else { throw CryptoError.authenticationFailed }
        var ok = true
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(ctCount - tagLength, 1)) { out, initialised in
            var written: UInt64 = 0
            let rc = withNonce(nonce) { npub in
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in
                        ciphertext.withUnsafeBytes { c in
                            crypto_aead_chacha20poly1305_ietf_decrypt(
                                out.baseAddress, &written, nil,
                                c.bindMemory(to: UInt8.self).baseAddress!, UInt64(c.count),
                                a.bindMemory(to: UInt8.self).baseAddress, UInt64(a.count),
                                npub, k.bindMemory(to: UInt8.self).baseAddress!)
                        }
                    }
                }
            }
            ok = rc == 0
            initialised = ok ? Int(written) : 0
        }
        guard ok else { throw CryptoError.authenticationFailed }
        return plaintext
    }
}
