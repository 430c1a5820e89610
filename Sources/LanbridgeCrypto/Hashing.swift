/// SHA-256 (FIPS 180-4), on the build's crypto backend.
public enum SHA256 {
    public static let length = 32

    /// Hashes the concatenation of `parts`, which are borrowed, never copied.
    public static func hash(_ parts: any ContiguousByteStorage...) -> [UInt8] {
        hash(parts: parts)
    }

    public static func hash(parts: [any ContiguousByteStorage]) -> [UInt8] {
        Backend.sha256(parts)
    }
}

/// HMAC-SHA-256 (RFC 2104), with keys of any length, on the build's crypto backend.
public enum HMACSHA256 {
    public static let length = 32

    /// HMAC(key, concatenation of `parts`); the result is treated as secret.
    public static func authenticate(key: some ContiguousByteStorage, _ parts: any ContiguousByteStorage...) -> SecureBytes {
        authenticate(key: key, parts: parts)
    }

    public static func authenticate(key: some ContiguousByteStorage, parts: [any ContiguousByteStorage]) -> SecureBytes {
        SecureBytes(count: length) { out in key.withUnsafeBytes { Backend.hmacSHA256(key: $0, parts, into: out) } }
    }
}

/// Cryptographically secure random bytes, from the build's crypto backend.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { Backend.randomBytes(into: $0) }
        return out
    }
}
