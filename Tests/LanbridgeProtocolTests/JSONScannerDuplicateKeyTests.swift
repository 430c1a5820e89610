import LanbridgeProtocol
import TestSupport
import Testing

/// The duplicate-key check, against a model: an object has a duplicate when two of its keys decode
/// to the same bytes. The scanner compares the keys of an object with few of them and hashes the
/// rest, so random documents cross that line in every way: objects just under and over it, a
/// child that crosses it inside a parent that does not, escaped spellings of the same key.
struct JSONScannerDuplicateKeyTests {
    /// Spellings and what they decode to; "\u0061" is "a" and "\u0062\u0063" is "bc".
    static let spellings: [(json: String, decoded: String)] = [
        ("a", "a"), (#"\u0061"#, "a"), ("b", "b"), ("bc", "bc"), (#"\u0062\u0063"#, "bc"), ("", ""),
        ("k0", "k0"), ("k1", "k1"), ("k2", "k2"), ("k3", "k3"), ("k4", "k4"), ("k5", "k5"), ("k6", "k6"),
        ("k7", "k7"), ("k8", "k8"), ("k9", "k9"), ("long-key-of-twenty-1", "long-key-of-twenty-1"),
        ("long-key-of-twenty-2", "long-key-of-twenty-2"), ("long-key-of-twenty-\\u0032", "long-key-of-twenty-2"),
    ]

    /// A random value (an object, an array or a number) and whether any object in it has a key twice.
    func value(depth: Int, _ rng: inout SplitMix) -> (text: String, duplicate: Bool) {
        switch depth < 3 ? Int.random(in: 0...5, using: &rng) : 5 {
        case 0...2:
            // Mostly distinct keys, sometimes one again: around the few-keys line (8).
            let count = Int.random(in: 0...14, using: &rng)
            var parts: [String] = [], seen: Set<String> = [], duplicate = false
            for _ in 0..<count {
                let spelling =
                    Int.random(in: 0..<12, using: &rng) == 0
                    ? Self.spellings.randomElement(using: &rng)!
                    : (Self.spellings.filter { !seen.contains($0.decoded) }.randomElement(using: &rng) ?? Self.spellings[0])
                duplicate = duplicate || !seen.insert(spelling.decoded).inserted
                let inner = value(depth: depth + 1, &rng)
                duplicate = duplicate || inner.duplicate
                parts.append("\"\(spelling.json)\":\(inner.text)")
            }
            return ("{" + parts.joined(separator: ",") + "}", duplicate)
        case 3, 4:
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth: depth + 1, &rng) }
            return ("[" + items.map(\.text).joined(separator: ",") + "]", items.contains { $0.duplicate })
        default:
            return (String(Int.random(in: 0...99, using: &rng)), false)
        }
    }

    @Test func agreesWithTheModelOnRandomDocuments() {
        var rng = SplitMix(state: 40)
        var duplicates = 0
        for _ in 0..<10_000 {
            let (text, duplicate) = value(depth: 0, &rng)
            let refused = (try? JSONScanner.validate(Array(text.utf8))) == nil
            #expect(refused == duplicate, "\(text)")
            if duplicate { duplicates += 1 }
        }
        #expect(duplicates > 1_000 && duplicates < 9_000, "both kinds of document were tried: \(duplicates) with a duplicate")
    }

    /// A key seen before a child crossed the few-keys line, repeated after the child closed.
    @Test func aParentsEarlierKeyIsFoundAfterABigChildCloses() {
        let child = "{" + (0..<12).map { "\"c\($0)\":{\"x\":1,\"y\":{\"x\":2}}" }.joined(separator: ",") + "}"
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.validate(Array("{\"a\":1,\"b\":\(child),\"a\":2}".utf8)) }
        #expect(throws: Never.self) { try JSONScanner.validate(Array("{\"a\":1,\"b\":\(child),\"c0\":2}".utf8)) }
    }
}
