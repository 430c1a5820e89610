import LanbridgeCrypto

/// The human-checkable name of a public key: the node ID of a node, the fingerprint of a bridge.
///
/// `SHA-256("lanbridge-fingerprint-v1" || publicKey)`, first 80 bits, Crockford base32,
/// in four groups of four: `7K2M-9QXD-3HJA-PW4T`. Crockford's alphabet has no I, L, O or U,
/// so it survives being read aloud; parsing folds O→0 and I/L→1 back.
public struct Fingerprint: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public static let domain = Array("lanbridge-fingerprint-v1".utf8)
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let characterCount = 16

    /// The canonical form with dashes.
    public let description: String

    public init(publicKey: [UInt8]) {
        let digest = SHA256.hash(Self.domain, publicKey)
        description = Self.format(Self.base32(Array(digest.prefix(10))))
    }

    /// Parses what a person typed: any case, dashes or spaces anywhere, confusable letters folded.
    public init?(_ text: String) {
        // The canonical form (what the gateway sends on every invoke) is taken as it is.
        if Self.isCanonical(text) {
            description = text
            return
        }
        var chars: [UInt8] = []
        for c in text.uppercased().utf8 {
            switch c {
            case UInt8(ascii: "-"), UInt8(ascii: " "): continue
            case UInt8(ascii: "O"): chars.append(UInt8(ascii: "0"))
            case UInt8(ascii: "I"), UInt8(ascii: "L"): chars.append(UInt8(ascii: "1"))
            default:
                guard Self.alphabet.contains(c) else { return nil }
                chars.append(c)
            }
        }
        guard chars.count == Self.characterCount else { return nil }
        description = Self.format(chars)
    }

    /// The first two groups: what mDNS TXT records carry as a hint.
    public var short: String { String(description.prefix(9)) }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = Fingerprint(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a fingerprint: \(text)"))
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (a: Fingerprint, b: Fingerprint) -> Bool { a.description < b.description }

    private static func base32(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        return out  // 80 bits is exactly 16 characters: no remainder
    }

    private static func format(_ chars: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(characterCount + 3)
        for (index, char) in chars.enumerated() {
            if index > 0, index % 4 == 0 { out.append(UInt8(ascii: "-")) }
            out.append(char)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Four groups of four characters of the alphabet, joined by dashes.
    private static func isCanonical(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count == characterCount + 3 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 5 == 4 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !canonical[Int(byte)] {
                return false
            }
        }
        return true
    }

    private static let canonical: [Bool] = (0..<256).map { alphabet.contains(UInt8($0)) }
}
