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
        var out: [UInt8] = []
        out.reserveCapacity(size + 1024)
        func put(_ s: String) { out.append(contentsOf: s.utf8) }
        switch self {
        case .plain:
            put("{")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put("\"f\(k)\":\"" + String(repeating: "x", count: 4000) + "\"")
                k += 1
            }
            put("}")
        case .wideObject:
            put("{")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put("\"a\(k)\":0")
                k += 1
            }
            put("}")
        case .deepNesting:
            let depth = 511  // within JSONScanner.maxDepth with the outer array
            put("[")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put(String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth))
                k += 1
            }
            put("]")
        case .escapes:
            put("[")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put("\"" + String(repeating: #"\n\u00e9\ud83d\ude00\"\\"#, count: 200) + "\"")
                k += 1
            }
            put("]")
        case .longNumbers:
            put("[")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                // alternately far past a double's precision, and at the very edge of its range
                put(k % 2 == 0 ? "-" + String(repeating: "9", count: 900) + ".5e-600"
                               : "1" + String(repeating: "7", count: 851) + "e-543")
                k += 1
            }
            put("]")
        case .smallArrays:
            put("[")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put(k % 2 == 0 ? "[]" : "[0]")
                k += 1
            }
            put("]")
        case .lateKeys:
            let prefix = String(repeating: "p", count: 200)
            put("{")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put("\"\(prefix)\(k)\":0")
                k += 1
            }
            put("}")
        case .escapedKeys:
            put("{")
            var k = 0
            while out.count < size {
                if k > 0 { put(",") }
                put("\"\\u0061\\u0062\(k)\":0")
                k += 1
            }
            put("}")
        }
        return out
    }
}
