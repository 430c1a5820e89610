import LanbridgeCrypto

/// CipherState (spec §5.1): a key `k` and a 64-bit nonce `n`. Without a key it passes plaintext through.
public struct CipherState: Sendable {
    private var k: SecureBytes?
    public private(set) var n: UInt64 = 0

    public init(key: SecureBytes? = nil) {
        k = key
    }

    public var hasKey: Bool { k != nil }

    /// 2^64-1 is reserved (spec §5.1); reaching it ends the session rather than reusing a nonce.
    private mutating func nextNonce() throws -> UInt64 {
        guard n < UInt64.max else { throw NoiseError.nonceExhausted }
        defer { n += 1 }
        return n
    }

    public mutating func encryptWithAd(_ ad: some ContiguousByteStorage, _ plaintext: some ContiguousByteStorage) throws -> [UInt8] {
        guard let k else { return plaintext.withUnsafeBytes { Array($0) } }
        return ChaChaPoly.seal(key: k, nonce: try nextNonce(), ad: ad, plaintext: plaintext)
    }

    /// On failure `n` is not advanced, as the spec requires.
    public mutating func decryptWithAd(_ ad: some ContiguousByteStorage, _ ciphertext: some ContiguousByteStorage) throws -> [UInt8] {
        guard let k else { return ciphertext.withUnsafeBytes { Array($0) } }
        guard n < UInt64.max else { throw NoiseError.nonceExhausted }
        do {
            let plaintext = try ChaChaPoly.open(key: k, nonce: n, ad: ad, ciphertext: ciphertext)
            n += 1
            return plaintext
        } catch {
            throw NoiseError.decryptionFailed
        }
    }

    /// Transport fast path: encrypts `buffer[start...]` in place and appends the tag.
    public mutating func encryptInPlace(_ buffer: inout [UInt8], from start: Int) throws {
        guard let k else { return }
        ChaChaPoly.sealInPlace(key: k, nonce: try nextNonce(), ad: [UInt8](), buffer: &buffer, from: start)
    }

    /// Transport fast path: decrypts `buffer[range]` (ciphertext then tag) where it lies; the
    /// plaintext is the range less its last 16 bytes. `n` advances only on success.
    public mutating func decryptInPlace(_ buffer: inout [UInt8], range: Range<Int>) throws {
        guard let k else { return }
        guard n < UInt64.max else { throw NoiseError.nonceExhausted }
        do {
            try buffer.withUnsafeMutableBytes { all in
                try ChaChaPoly.openInPlace(key: k, nonce: n, ad: [UInt8](), region: UnsafeMutableRawBufferPointer(rebasing: all[range]))
            }
            n += 1
        } catch {
            throw NoiseError.decryptionFailed
        }
    }
}
