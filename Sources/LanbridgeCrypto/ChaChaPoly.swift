/// IETF ChaCha20-Poly1305 (RFC 8439), with Noise's nonce layout: 4 zero bytes, then a 64-bit
/// little-endian counter; on the build's crypto backend.
public enum ChaChaPoly {
    public static let keyLength = 32
    public static let tagLength = 16

    private static func withNonce<R>(_ n: UInt64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var nonce: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &nonce) { raw in
            withUnsafeBytes(of: n.littleEndian) { raw.baseAddress!.advanced(by: 4).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            return body(UnsafeRawBufferPointer(raw))
        }
    }

    /// Encrypts `plaintext` and appends the 16-byte tag.
    public static func seal(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, plaintext: some ContiguousByteStorage) -> [UInt8] {
        var buffer = plaintext.withUnsafeBytes { Array($0) }
        sealInPlace(key: key, nonce: nonce, ad: ad, buffer: &buffer, from: 0)
        return buffer
    }

    /// Verifies the tag and decrypts; throws `authenticationFailed` on any tampering.
    public static func open(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, ciphertext: some ContiguousByteStorage) throws -> [UInt8] {
        var buffer = ciphertext.withUnsafeBytes { Array($0) }
        try openInPlace(key: key, nonce: nonce, ad: ad, buffer: &buffer)
        return buffer
    }

    /// Encrypts `buffer[start...]` in place and appends the tag: no second copy of the plaintext.
    public static func sealInPlace(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, buffer: inout [UInt8], from start: Int) {
        var tag = [UInt8](repeating: 0, count: tagLength)
        buffer.withUnsafeMutableBytes { all in
            let region = UnsafeMutableRawBufferPointer(rebasing: all[start...])
            withNonce(nonce) { npub in
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in tag.withUnsafeMutableBytes { Backend.seal(key: k, nonce: npub, ad: a, text: region, tag: $0) } }
                }
            }
        }
        buffer += tag
    }

    /// Verifies and decrypts `region` (ciphertext then tag) in place; the plaintext is its first
    /// `region.count - tagLength` bytes. On failure the region is left as it was.
    public static func openInPlace(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, region: UnsafeMutableRawBufferPointer) throws {
        guard region.count >= tagLength else { throw CryptoError.authenticationFailed }
        let textCount = region.count - tagLength
        let ok = withNonce(nonce) { npub in
            key.withUnsafeBytes { k in
                ad.withUnsafeBytes { a in
                    Backend.open(
                        key: k, nonce: npub, ad: a, text: UnsafeMutableRawBufferPointer(rebasing: region[..<textCount]),
                        tag: UnsafeRawBufferPointer(rebasing: region[textCount...]))
                }
            }
        }
        guard ok else { throw CryptoError.authenticationFailed }
    }

    /// Verifies and decrypts `buffer` (ciphertext then tag) in place, dropping the tag.
    /// On failure the buffer is left as it was.
    public static func openInPlace(key: SecureBytes, nonce: UInt64, ad: some ContiguousByteStorage, buffer: inout [UInt8]) throws {
        try buffer.withUnsafeMutableBytes { try openInPlace(key: key, nonce: nonce, ad: ad, region: $0) }
        buffer.removeLast(tagLength)
    }
}
