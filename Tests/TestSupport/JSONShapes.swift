/// Documents of a chosen size in the shapes an adversary picks against a JSON reader, each beside
/// a plain object of the same size: the scanner's tests hold its work per byte to a constant on
/// all of them, and `lanbridge-bench` times them side by side.
public enum JSONShape: String, CaseIterable, Sendable {
    /// {"f0":"xxxx…","f1":…}: a few fields of long plain strings (the baseline).
    case plain
    /// {"a0":0,"a1":0,…}: as many short keys as fit (the freeze of issue 21).
    case wideObject = "wide-object"
    /// Arrays nested to the depth limit, again and again.
    case deepNesting = "deep-nesting"
    /// Long strings made only of escapes (\n, \u00e9, surrogate pairs).
    case escapes
    /// Long number literals: hundreds of digits, exponents at a double's edge.
    case longNumbers = "long-numbers"
    /// [[],[0],[],…]: many tiny arrays.
    case smallArrays = "small-arrays"
    /// Keys 200 bytes long that differ only in their last bytes.
    case lateKeys = "late-keys"
    /// Keys written with \u escapes (decoded before the duplicate check).
    case escapedKeys = "escaped-keys"

    /// A strict JSON document of about `size` bytes (never less) in this shape.
    public func document(size: Int) -> [UInt8] {
        switch self {
        case .plain: return Self.repeated("{", "}", size) { "\"f\($0)\":\"" + String(repeating: "x", count: 4000) + "\"" }
        case .wideObject: return Self.repeated("{", "}", size) { "\"a\($0)\":0" }
        case .deepNesting:
            let depth = 511  // within JSONScanner.maxDepth with the outer array
            return Self.repeated("[", "]", size) { _ in String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth) }
        case .escapes: return Self.repeated("[", "]", size) { _ in "\"" + String(repeating: #"\n\u00e9\ud83d\ude00\"\\"#, count: 200) + "\"" }
        case .longNumbers:
            // alternately far past a double's precision, and at the very edge of its range
            return Self.repeated("[", "]", size) { $0 % 2 == 0 ? "-" + String(repeating: "9", count: 900) + ".5e-600" : "1" + String(repeating: "7", count: 851) + "e-543" }
        case .smallArrays: return Self.repeated("[", "]", size) { $0 % 2 == 0 ? "[]" : "[0]" }
        case .lateKeys:
            let prefix = String(repeating: "p", count: 200)
            return Self.repeated("{", "}", size) { "\"\(prefix)\($0)\":0" }
        case .escapedKeys: return Self.repeated("{", "}", size) { "\"\\u0061\\u0062\($0)\":0" }
        }
    }

    /// `open`, then `item(0)`, `item(1)`, … separated by commas until `size` bytes, then `close`.
    private static func repeated(_ open: String, _ close: String, _ size: Int, _ item: (Int) -> String) -> [UInt8] {
        var out = Array(open.utf8)
        out.reserveCapacity(size + 1024)
        var k = 0
        while out.count < size {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: item(k).utf8)
            k += 1
        }
        out.append(contentsOf: close.utf8)
        return out
    }
}
