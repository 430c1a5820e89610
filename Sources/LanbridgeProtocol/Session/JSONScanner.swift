/// Finds where a top-level member's value lies in a JSON object's bytes, without parsing it, so
/// the bridge can pass a large invoke result (a snapshot's base64) through as the bytes it arrived
/// in. It checks structure (strings, nesting) as it skips; callers still parse the rest of the
/// document with a real decoder, which rejects anything malformed.
public enum JSONScanner {
    /// The range of the value of `key` in the object `bytes` (the last one, if repeated, as
    /// Foundation's decoder does), or nil if there is none or the bytes are not an object.
    public static func valueRange(ofKey key: String, in bytes: [UInt8]) -> Range<Int>? {
        valueRanges(ofKeys: [key], in: bytes)?[key]
    }

    /// The ranges of several top-level members' values in one pass (nil if the bytes are not an
    /// object; absent keys are missing from the result).
    public static func valueRanges(ofKeys keys: [String], in bytes: [UInt8]) -> [String: Range<Int>]? {
        bytes.withUnsafeBufferPointer { scan(keys, $0) }
    }

    private static func scan(_ keys: [String], _ bytes: UnsafeBufferPointer<UInt8>) -> [String: Range<Int>]? {
        let wanted = keys.map { Array($0.utf8) }
        var i = skipSpace(bytes, 0)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return nil }
        i = skipSpace(bytes, i + 1)
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { return [:] }
        var found: [String: Range<Int>] = [:]
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "\""), let keyEnd = skipString(bytes, i) else { return nil }
            let name = bytes[(i + 1)..<(keyEnd - 1)]
            i = skipSpace(bytes, keyEnd)
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
            let start = skipSpace(bytes, i + 1)
            guard let end = skipValue(bytes, start) else { return nil }
            if let k = wanted.firstIndex(where: { name.elementsEqual($0) }) { found[keys[k]] = start..<end }
            i = skipSpace(bytes, end)
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: "}") { return found }
            guard bytes[i] == UInt8(ascii: ",") else { return nil }
            i = skipSpace(bytes, i + 1)
        }
        return nil
    }

    private static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var i = start
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        return i
    }

    /// `start` is at a quote; returns the index after the closing quote.
    private static func skipString(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var i = start + 1
        while i < b.count {
            switch b[i] {
            case UInt8(ascii: "\""): return i + 1
            case UInt8(ascii: "\\"): i += 2
            case 0..<0x20: return nil
            default: i += 1
            }
        }
        return nil
    }

    /// Returns the index after the value starting at `start`. Nesting is tracked with a counter,
    /// not recursion, so a deeply nested attack cannot exhaust the stack.
    private static func skipValue(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        guard start < b.count else { return nil }
        switch b[start] {
        case UInt8(ascii: "\""):
            return skipString(b, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\""):
                    guard let end = skipString(b, i) else { return nil }
                    i = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default:
                    break
                }
                i += 1
            }
            return nil
        default:
            // A number or a literal: up to the next delimiter.
            var i = start
            while i < b.count {
                let c = b[i]
                if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { break }
                i += 1
            }
            return i > start ? i : nil
        }
    }
}
