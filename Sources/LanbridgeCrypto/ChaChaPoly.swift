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

extension ChaChaPoly {
    /// Encrypts `buffer[start...]` in place and appends the tag: no second copy of the plaintext.
    public static func sealInPlace(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, buffer: inout [UInt8], from start: Int) {
        Sodium.ready()
        var tag = [UInt8](repeating: 0, count: tagLength)
        buffer.withUnsafeMutableBufferPointer { all in
            let region = UnsafeMutableBufferPointer(rebasing: all[start...])
            withNonce(nonce) { npub in
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in
                        _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                            region.baseAddress!, &tag, nil,
                            region.baseAddress, UInt64(region.count),
                            a.bindMemory(to: UInt8.self).baseAddress, UInt64(a.count),
                            nil, npub, k.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
        }
        buffer += tag
    }

    /// Verifies and decrypts `buffer` (ciphertext then tag) in place, dropping the tag.
    /// On failure the buffer is left as it was.
    public static func openInPlace(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, buffer: inout [UInt8]) throws {
        Sodium.ready()
        guard buffer.count >= tagLength else { throw CryptoError.authenticationFailed }
        let textCount = buffer.count - tagLength
        let rc = buffer.withUnsafeMutableBufferPointer { all in
            withNonce(nonce) { npub in
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in
                        crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                            all.baseAddress!, nil,
                            all.baseAddress!, UInt64(textCount),
                            all.baseAddress! + textCount,
                            a.bindMemory(to: UInt8.self).baseAddress, UInt64(a.count),
                            npub, k.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
        }
        guard rc == 0 else { throw CryptoError.authenticationFailed }
        buffer.removeLast(tagLength)
    }
}
