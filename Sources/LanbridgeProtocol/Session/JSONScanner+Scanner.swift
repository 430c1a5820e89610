/// Checks that bytes are one strict JSON document and finds where top-level members' values lie,
/// The scanner itself: one pass over the bytes, strict JSON, every object's keys checked for
/// duplicates in linear time (`JSONScanner`'s entry points drive it).
extension JSONScanner {
    /// A key of one object, for the duplicate check: its decoded bytes, borrowed from the input
    /// (or from `Scanner.decodedKeys` when it had escapes), and which object it belongs to.
    struct ObjectKey: Hashable {
        let object: Int
        let bytes: UnsafeRawBufferPointer

        static func == (a: ObjectKey, b: ObjectKey) -> Bool { a.object == b.object && a.bytes.elementsEqual(b.bytes) }
        func hash(into hasher: inout Hasher) {
            hasher.combine(object)
            hasher.combine(bytes: bytes)  // seeded per process: colliding keys cannot be precomputed
        }
    }

    struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        /// Work beyond moving through the input (tokens, key bytes hashed and compared).
        var steps = 0
        /// Every key of the document, tagged with its object: one table, inserted into in place.
        /// (A set per object held in the stack's enum was copied out and back for each key, which
        /// made a wide object cost the square of its keys.)
        private var keys: Set<ObjectKey> = []
        /// The keys of open objects that have few so far, flat in document order: an object's
        /// are contiguous (a child's are dropped when it closes). Comparing a few keys costs less
        /// than hashing them, and most objects have a few; past `fewKeys`, an object's go to `keys`.
        private var fewKeysOfOpenObjects: [UnsafeRawBufferPointer] = []
        static let fewKeys = 8
        private var objects = 0
        /// Keys that had escapes, decoded; freed by `release`.
        private var decodedKeys: [UnsafeMutableRawBufferPointer] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func release() {
            for buffer in decodedKeys { buffer.deallocate() }
            decodedKeys = []
        }

        private enum Container {
            /// The object's number, which tags its keys in `keys`, and where its keys start in
            /// `fewKeysOfOpenObjects` while it has few (nil once they are in `keys`).
            case object(Int, firstOfFew: Int?)
            case array
        }

        private enum Expect { case value, keyOrEnd, key, colon, commaOrEnd, valueOrEnd }

        func fail(_ reason: String) -> Invalid { Invalid(offset: i, reason: reason) }

        mutating func document(requireObject: Bool, member: (_ key: UnsafeRawBufferPointer, _ value: Range<Int>) -> Void) throws(Invalid) {
            var stack: [Container] = []
            var expect = Expect.value
            var topKey: UnsafeRawBufferPointer?
            var topValueStart = 0
            skipSpace()
            if requireObject, i >= bytes.count || bytes[i] != UInt8(ascii: "{") { throw fail("expected an object") }
            while true {
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end") }
                let c = bytes[i]
                steps += 1
                var completed = false
                switch expect {
                case .value, .valueOrEnd:
                    if expect == .valueOrEnd, c == UInt8(ascii: "]") {
                        i += 1
                        stack.removeLast()
                        completed = true
                        break
                    }
                    if stack.count == 1, topKey != nil { topValueStart = i }
                    switch c {
                    case UInt8(ascii: "{"):
                        guard stack.count < JSONScanner.maxDepth else { throw fail("nested deeper than \(JSONScanner.maxDepth)") }
                        objects += 1
                        stack.append(.object(objects, firstOfFew: fewKeysOfOpenObjects.count))
                        i += 1
                        expect = .keyOrEnd
                    case UInt8(ascii: "["):
                        guard stack.count < JSONScanner.maxDepth else { throw fail("nested deeper than \(JSONScanner.maxDepth)") }
                        stack.append(.array)
                        i += 1
                        expect = .valueOrEnd
                    case UInt8(ascii: "\""):
                        try skipString()
                        completed = true
                    case UInt8(ascii: "t"): try literal("true"); completed = true
                    case UInt8(ascii: "f"): try literal("false"); completed = true
                    case UInt8(ascii: "n"): try literal("null"); completed = true
                    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(); completed = true
                    default: throw fail("expected a value")
                    }
                case .keyOrEnd, .key:
                    if expect == .keyOrEnd, c == UInt8(ascii: "}") {
                        i += 1
                        close(&stack)
                        completed = true
                        break
                    }
                    guard c == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    let start = i
                    let key = try keyBytes()
                    guard case let .object(object, firstOfFew) = stack[stack.count - 1] else { throw fail("key outside an object") }
                    steps += key.count
                    var first = firstOfFew
                    guard record(key, of: object, firstOfFew: &first) else {
                        i = start
                        throw fail("duplicate key \"\(String(decoding: key, as: UTF8.self))\"")
                    }
                    if first != firstOfFew { stack[stack.count - 1] = .object(object, firstOfFew: first) }
                    if stack.count == 1 { topKey = key }
                    expect = .colon
                case .colon:
                    guard c == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    expect = .value
                case .commaOrEnd:
                    let inObject = if case .object = stack[stack.count - 1] { true } else { false }
                    if c == UInt8(ascii: ",") {
                        i += 1
                        expect = inObject ? .key : .value
                        continue
                    }
                    guard c == UInt8(ascii: inObject ? "}" : "]") else { throw fail(inObject ? "expected ',' or '}'" : "expected ',' or ']'") }
                    i += 1
                    close(&stack)
                    completed = true
                }
                guard completed else { continue }
                // A value ended at i.
                if stack.isEmpty {
                    skipSpace()
                    guard i == bytes.count else { throw fail("garbage after the document") }
                    return
                }
                if stack.count == 1, let key = topKey, case .object = stack[0] {
                    member(key, topValueStart..<i)
                    topKey = nil
                }
                expect = .commaOrEnd
            }
        }

        /// Records `key` of `object` for the duplicate check; false if the object has it already.
        /// `firstOfFew` becomes nil when the object's keys move to the hashed table.
        private mutating func record(_ key: UnsafeRawBufferPointer, of object: Int, firstOfFew: inout Int?) -> Bool {
            if let first = firstOfFew {
                for earlier in fewKeysOfOpenObjects[first...] where earlier.count == key.count {
                    steps += key.count
                    if Self.same(earlier, key) { return false }
                }
                if fewKeysOfOpenObjects.count - first < Self.fewKeys {
                    fewKeysOfOpenObjects.append(key)
                    return true
                }
                // One more than a few: this object's keys go to the table, hashed, from now on.
                for earlier in fewKeysOfOpenObjects[first...] {
                    steps += earlier.count
                    keys.insert(ObjectKey(object: object, bytes: earlier))
                }
                fewKeysOfOpenObjects.removeSubrange(first...)
                firstOfFew = nil
            }
            return keys.insert(ObjectKey(object: object, bytes: key)).inserted
        }

        /// Ends the innermost container; an object's few keys go with it.
        private mutating func close(_ stack: inout [Container]) {
            if case let .object(_, first?) = stack.removeLast() { fewKeysOfOpenObjects.removeSubrange(first...) }
        }

        /// Byte-for-byte equality of two keys of the same length, a word at a time.
        private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
            var k = 0
            while k + 8 <= a.count {
                if a.loadUnaligned(fromByteOffset: k, as: UInt64.self) != b.loadUnaligned(fromByteOffset: k, as: UInt64.self) { return false }
                k += 8
            }
            while k < a.count {
                if a[k] != b[k] { return false }
                k += 1
            }
            return true
        }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func literal(_ text: StaticString) throws(Invalid) {
            let count = text.utf8CodeUnitCount
            guard i + count <= bytes.count else { throw fail("bad literal") }
            for k in 0..<count where bytes[i + k] != text.utf8Start[k] { throw fail("bad literal") }
            i += count
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() throws(Invalid) {
            func digit(_ k: Int) -> Bool { k < bytes.count && bytes[k] >= UInt8(ascii: "0") && bytes[k] <= UInt8(ascii: "9") }
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { throw fail("bad number") }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else { while digit(i) { i += 1 } }
            let bareZero = i == start + 1 && bytes[start] == UInt8(ascii: "0")
            var exponent = false
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digit(i) else { throw fail("bad number") }
                while digit(i) { i += 1 }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                // Foundation's JSONDecoder (Swift 6.3) refuses `0e3` though RFC 8259 allows it (it
                // takes `-0e3` and `0e+3`): refused here too, so the two readers never disagree.
                if bareZero, digit(i + 1) { throw fail("0e<digits> is not read the same by every parser; write 0") }
                exponent = true
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digit(i) else { throw fail("bad number") }
                while digit(i) { i += 1 }
            }
            // A number must end at a delimiter ("01", "1.2.3" do not).
            if i < bytes.count {
                let c = bytes[i]
                guard c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else {
                    throw fail("bad number")
                }
            }
            // Beyond a double's range (1e400) decoders disagree (infinity, or an error): refused.
            // Only long tokens or exponents can get there, so plain ones cost nothing more; and the
            // check reads the token once, never handing a parser more than a bounded string.
            if exponent || i - start > 15, !JSONNumber.isFinite(UnsafeBufferPointer(rebasing: bytes[start..<i])) {
                throw fail("number out of range")
            }
        }

        /// Skips a string token, validating it, without building its value.
        /// How many bytes from `start` on are plain string bytes (printable ASCII but the quote and
        /// the backslash), stepping eight at a time while a whole word is: a large base64 payload is read
        /// a word per step instead of a byte (issue 40). Never counts a byte that needs a look of
        /// its own: the word tests below have no false negatives, only rare false positives, which
        /// fall back to the byte loop.
        func plainRun(from start: Int) -> Int {
            guard let base = bytes.baseAddress else { return 0 }
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            func hasZeroByte(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
            var at = start
            while at + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + at).loadUnaligned(as: UInt64.self)
                let special =
                    word & highs != 0  // UTF-8 beyond ASCII
                    || (word &- ones &* 0x20) & ~word & highs != 0  // a control byte (< 0x20)
                    || hasZeroByte(word ^ (ones &* UInt64(UInt8(ascii: "\""))))  // a quote
                    || hasZeroByte(word ^ (ones &* UInt64(UInt8(ascii: "\\"))))  // a backslash
                if special { break }
                at += 8
            }
            return at - start
        }

        mutating func skipString() throws(Invalid) {
            i += 1
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; return }
                if c == UInt8(ascii: "\\") { _ = try escape(); continue }
                if c < 0x20 { throw fail("control character in a string") }
                // A plain byte: leap over the plain words after it (escapes and short keys never try).
                if c < 0x80 { i += 1 + plainRun(from: i + 1); continue }
                try utf8Sequence()
            }
            throw fail("unterminated string")
        }

        /// A key's value as UTF-8: the input's own bytes when it has no escapes, else decoded into
        /// a buffer the scanner owns until `release`.
        mutating func keyBytes() throws(Invalid) -> UnsafeRawBufferPointer {
            let start = i
            try skipString()
            let inner = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[(start + 1)..<(i - 1)])
            guard inner.contains(UInt8(ascii: "\\")) else { return inner }
            let end = i
            i = start
            let decoded = try string()
            i = end
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: decoded.count, alignment: 1)
            decoded.withUnsafeBytes { copy.copyMemory(from: $0) }
            decodedKeys.append(copy)
            return UnsafeRawBufferPointer(copy)
        }

        /// A string token's value, as UTF-8.
        mutating func string() throws(Invalid) -> [UInt8] {
            var out: [UInt8] = []
            i += 1
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; return out }
                if c == UInt8(ascii: "\\") {
                    let scalar = try escape()
                    UTF8.encode(scalar) { out.append($0) }
                    continue
                }
                if c < 0x20 { throw fail("control character in a string") }
                let start = i
                if c < 0x80 { i += 1 + plainRun(from: i + 1) } else { try utf8Sequence() }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
            }
            throw fail("unterminated string")
        }

        /// At a backslash: one escape (a surrogate pair counts as one), returned as its scalar.
        mutating func escape() throws(Invalid) -> Unicode.Scalar {
            guard i + 1 < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let high = try hex4()
                if (0xD800...0xDBFF).contains(high) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else { throw fail("lone surrogate escape") }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate escape") }
                    return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) ?? "\u{FFFD}"
                }
                guard !(0xDC00...0xDFFF).contains(high), let scalar = Unicode.Scalar(high) else { throw fail("lone surrogate escape") }
                return scalar
            default:
                throw fail("unknown escape")
            }
        }

        mutating func hex4() throws(Invalid) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
            var value: UInt32 = 0
            for k in 0..<4 {
                let c = bytes[i + k]
                let digit: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
                default: throw fail("bad \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            i += 4
            return value
        }

        /// One multi-byte UTF-8 sequence starting at i (the lead byte is ≥ 0x80), per RFC 3629.
        mutating func utf8Sequence() throws(Invalid) {
            let lead = bytes[i]
            func continuation(_ k: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool { k < bytes.count && range.contains(bytes[k]) }
            switch lead {
            case 0xC2...0xDF:
                guard continuation(i + 1) else { throw fail("invalid UTF-8") }
                i += 2
            case 0xE0...0xEF:
                let second: ClosedRange<UInt8> = lead == 0xE0 ? 0xA0...0xBF : lead == 0xED ? 0x80...0x9F : 0x80...0xBF
                guard continuation(i + 1, second), continuation(i + 2) else { throw fail("invalid UTF-8") }
                i += 3
            case 0xF0...0xF4:
                let second: ClosedRange<UInt8> = lead == 0xF0 ? 0x90...0xBF : lead == 0xF4 ? 0x80...0x8F : 0x80...0xBF
                guard continuation(i + 1, second), continuation(i + 2), continuation(i + 3) else { throw fail("invalid UTF-8") }
                i += 4
            default:
                throw fail("invalid UTF-8")
            }
        }
    }
}
