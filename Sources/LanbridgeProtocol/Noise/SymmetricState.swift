import LanbridgeCrypto

/// SymmetricState (spec §5.2): the chaining key `ck`, the handshake hash `h` and a CipherState.
struct SymmetricState: Sendable {
    private var ck: SecureBytes
    private(set) var h: [UInt8]
    private var cipher = CipherState()

    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        // InitializeSymmetric: pad a short name with zeros, hash a long one.
        h =
            name.count <= Noise.hashLength
            ? name + [UInt8](repeating: 0, count: Noise.hashLength - name.count)
            : SHA256.hash(name)
        ck = SecureBytes(copying: h)
    }

    var hasKey: Bool { cipher.hasKey }

    mutating func mixKey(_ inputKeyMaterial: some ContiguousByteStorage) {
        let out = hkdf(inputKeyMaterial, outputs: 2)
        ck = out[0]
        cipher = CipherState(key: out[1])
    }

    mutating func mixHash(_ data: [UInt8]) {
        h = SHA256.hash(h, data)
    }

    mutating func mixKeyAndHash(_ inputKeyMaterial: some ContiguousByteStorage) {
        let out = hkdf(inputKeyMaterial, outputs: 3)
        ck = out[0]
        mixHash(out[1].withUnsafeBytes { Array($0) })  // becomes part of h, which is public
        cipher = CipherState(key: out[2])
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encryptWithAd(h, plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decryptWithAd(h, ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split (spec §5.2): the two transport CipherStates, initiator→responder first.
    func split() -> (CipherState, CipherState) {
        let out = hkdf([UInt8](), outputs: 2)
        return (CipherState(key: out[0]), CipherState(key: out[1]))
    }

    /// HKDF (spec §4.3): HMAC-SHA256 with the chaining key as salt; output i = HMAC(temp, output(i-1) || i).
    private func hkdf(_ inputKeyMaterial: some ContiguousByteStorage, outputs: Int) -> [SecureBytes] {
        let temp = HMACSHA256.authenticate(key: ck, inputKeyMaterial)
        var out: [SecureBytes] = []
        var previous: any ContiguousByteStorage = [UInt8]()
        for i in 1...outputs {
            let next = HMACSHA256.authenticate(key: temp, previous, [UInt8(i)])
            out.append(next)
            previous = next
        }
        return out
    }
}
