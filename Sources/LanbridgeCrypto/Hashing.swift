import CSodium

/// SHA-256 (FIPS 180-4) via libsodium.
public enum SHA256 {
    public static let length = 32

    /// Hashes the concatenation of `parts`, which are borrowed, never copied.
    public static func hash(_ parts: any ContiguousByteStorage...) -> [UInt8] {
        hash(parts: parts)
    }

    public static func hash(parts: [any ContiguousByteStorage]) -> [UInt8] {
        Sodium.ready()
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        for part in parts {
            part.withUnsafeBytes {
                _ = crypto_hash_sha256_update(&state, $0.bindMemory(to: UInt8.self).baseAddress, UInt64($0.count))
            }
        }
        var out = [UInt8](repeating: 0, count: length)
        crypto_hash_sha256_final(&state, &out)
        withUnsafeMutableBytes(of: &state) { Sodium.wipe($0) }
        return out
    }
}

/// HMAC-SHA-256 (RFC 2104) via libsodium, with keys of any length.
public enum HMACSHA256 {
    public static let length = 32

    /// HMAC(key, concatenation of `parts`); the result is treated as secret.
    public static func authenticate(key: some ContiguousByteStorage, _ parts: any ContiguousByteStorage...) -> SecureBytes {
        authenticate(key: key, parts: parts)
    }

    public static func authenticate(key: some ContiguousByteStorage, parts: [any ContiguousByteStorage]) -> SecureBytes {
        Sodium.ready()
        return SecureBytes(count: length) { out in
            var state = crypto_auth_hmacsha256_state()
            key.withUnsafeBytes { k in
                // An empty key is legal HMAC; libsodium still wants a valid pointer.
                withUnsafeBytes(of: UInt8(0)) { empty in
                    let pointer = (k.count > 0 ? k : empty).bindMemory(to: UInt8.self).baseAddress!
                    _ = crypto_auth_hmacsha256_init(&state, pointer, k.count)
                }
            }
            for part in parts {
                part.withUnsafeBytes {
                    _ = crypto_auth_hmacsha256_update(&state, $0.bindMemory(to: UInt8.self).baseAddress, UInt64($0.count))
                }
            }
            crypto_auth_hmacsha256_final(&state, out.bindMemory(to: UInt8.self).baseAddress!)
            withUnsafeMutableBytes(of: &state) { Sodium.wipe($0) }
        }
    }
}

/// Cryptographically secure random bytes (libsodium `randombytes_buf`).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { if let base = $0.baseAddress { randombytes_buf(base, $0.count) } }
        return out
    }
}
