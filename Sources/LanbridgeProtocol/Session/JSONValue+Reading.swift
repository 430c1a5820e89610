/// Builds a `JSONValue` from bytes `JSONScanner` has already accepted: the scanner decides whether
/// the text is strict JSON, this only builds the tree, so the two cannot disagree. Much cheaper than
/// `Decodable` (which tries each case in turn); bounds are still checked, never trapped on.
extension JSONValue {
    /// Strict JSON (the scanner's rules: one value, no duplicate keys, bounded depth), or nil.
    public init?(strict bytes: [UInt8]) {
        guard (try? JSONScanner.validate(bytes)) != nil else { return nil }
        self.init(validated: bytes)
    }

    public init(validated bytes: [UInt8]) {
        var reader = Reader(bytes: bytes)
        self = reader.value()
    }

    private struct Reader {
        let bytes: [UInt8]
        var i = 0

        func peek() -> UInt8 { i < bytes.count ? bytes[i] : 0 }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func value() -> JSONValue {
            skipSpace()
            switch peek() {
            case UInt8(ascii: "{"):
                i += 1
                var fields: [String: JSONValue] = [:]
                skipSpace()
                if peek() == UInt8(ascii: "}") { i += 1; return .object(fields) }
                while i < bytes.count {
                    skipSpace()
                    let key = string()
                    skipSpace()
                    i += 1  // :
                    fields[key] = value()
                    skipSpace()
                    let separator = peek()
                    i += 1
                    if separator != UInt8(ascii: ",") { break }
                }
                return .object(fields)
            case UInt8(ascii: "["):
                i += 1
                var elements: [JSONValue] = []
                skipSpace()
                if peek() == UInt8(ascii: "]") { i += 1; return .array(elements) }
                while i < bytes.count {
                    elements.append(value())
                    skipSpace()
                    let separator = peek()
                    i += 1
                    if separator != UInt8(ascii: ",") { break }
                }
                return .array(elements)
            case UInt8(ascii: "\""):
                return .string(string())
            case UInt8(ascii: "t"):
                i += 4
                return .bool(true)
            case UInt8(ascii: "f"):
                i += 5
                return .bool(false)
            case UInt8(ascii: "n"):
                i += 4
                return .null
            default:
                let start = i
                while i < bytes.count, Self.numberBytes.contains(bytes[i]) { i += 1 }
                return .number(JSONNumber.double(bytes[start..<i]))
            }
        }

        static let numberBytes = Set(Array("+-0123456789.eE".utf8))

        /// A string token: copied as it is when it has no escapes, else decoded by the scanner.
        mutating func string() -> String {
            let start = i
            i += 1
            var escaped = false
            while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                if bytes[i] == UInt8(ascii: "\\") { escaped = true; i += 1 }
                i += 1
            }
            i += 1
            let end = min(i, bytes.count)
            if !escaped, end - start >= 2 { return String(decoding: bytes[(start + 1)..<(end - 1)], as: UTF8.self) }
            return JSONScanner.string(bytes[start..<end]) ?? ""
        }
    }
}
