/// Lowercase hex: hashes and nonces in messages, files and test vectors.
public enum Hex {
    public struct InvalidHex: Error { public let text: String }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) throws -> [UInt8] {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { throw InvalidHex(text: text) }
        func nibble(_ c: UInt8) throws -> UInt8 {
            guard let value = value(of: c) else { throw InvalidHex(text: text) }
            return value
        }
        return try stride(from: 0, to: chars.count, by: 2).map { try nibble(chars[$0]) << 4 | nibble(chars[$0 + 1]) }
    }

    /// A hex digit's value, either case.
    static func value(of c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }

    public static func isDigit(_ c: UInt8) -> Bool { value(of: c) != nil }
}
