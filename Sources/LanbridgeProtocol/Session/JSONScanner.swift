/// Checks that bytes are one strict JSON document and finds where top-level members' values lie,
/// in one pass, without building anything. The bridge relays a node's result (a snapshot's
/// megabytes of base64) as the bytes it arrived in, so this pass is what stands between a node and
/// the gateway: whatever it accepts, every JSON parser must read the same way.
///
/// Strict means RFC 8259 and nothing more: UTF-8 only (no overlong forms, surrogates or code points
/// past U+10FFFF), no control characters in strings, only the escapes the RFC lists and no lone
/// surrogate escapes, the RFC's number grammar (no `01`, `1.`, `.5`, `NaN`), the three literals,
/// no trailing commas or garbage, and no key twice in one object at any depth (parsers disagree on
/// which one wins). Nesting is tracked on a heap stack, never recursed into, up to `maxDepth`.
public enum JSONScanner {
    public static let maxDepth = 512

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        /// The wanted top-level members that had ended before the error (to say which request a
        /// malformed answer was for; never to act on its content).
        public var before: [String: Range<Int>] = [:]
        public var description: String { "not strict JSON at byte \(offset): \(reason)" }
    }

    /// Validates the whole document and returns the ranges of the named top-level members' values.
    /// Throws if the document is not strict JSON or not an object.
    public static func members(_ keys: [String], in bytes: [UInt8]) throws(Invalid) -> [String: Range<Int>] {
        let wanted = keys.map { Array($0.utf8) }
        var found: [String: Range<Int>] = [:]
        do {
            try bytes.withUnsafeBufferPointer { buffer throws(Invalid) in
                var scanner = Scanner(bytes: buffer)
                defer { scanner.release() }
                try scanner.document(requireObject: true) { key, range in
                    if let k = wanted.firstIndex(where: { $0.elementsEqual(key) }) { found[keys[k]] = range }
                }
            }
        } catch {
            var error = error
            error.before = found
            throw error
        }
        return found
    }

    /// Validates any JSON value (the whole input).
    public static func validate(_ bytes: some Collection<UInt8>) throws(Invalid) {
        let array = Array(bytes)
        try array.withUnsafeBufferPointer { buffer throws(Invalid) in
            var scanner = Scanner(bytes: buffer)
            defer { scanner.release() }
            try scanner.document(requireObject: false) { _, _ in }
        }
    }

    /// The work a scan of `bytes` does, in steps: tokens, plus every byte a key's check hashes or
    /// compares. Linear in the input whatever its shape (tests hold it to a constant per byte).
    public static func steps(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            defer { scanner.release() }
            _ = try? scanner.document(requireObject: false) { _, _ in }
            return scanner.steps + scanner.i
        }
    }

    /// The value of a JSON string token (quotes included), escapes resolved. The token must have
    /// passed validation.
    public static func string(_ token: ArraySlice<UInt8>) -> String? {
        guard token.first == UInt8(ascii: "\""), token.count >= 2 else { return nil }
        let array = Array(token)
        return array.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            return (try? scanner.string()).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
