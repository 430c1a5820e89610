/// A command name pattern in an access rule: `canvas.snapshot`, `canvas.*` or `*`.
/// Segments are ASCII letters, digits, `_` and `-`, joined by dots, at most `maxLength` bytes in
/// all; `*` may stand only as the last segment (or alone), and matches one or more remaining
/// segments. Every command name the bridge meets is checked here, and only here.
///
/// Names keep the case they are written in (OpenClaw's `canvas.a2ui.pushJSONL`), but two
/// spellings that differ only in ASCII case are one command: every comparison (rules, declared
/// commands, the catalogue) goes through `same(_:_:)` or `matches`, so `canvas.a2ui.pushjsonl`
/// in a deny rule also denies `canvas.a2ui.pushJSONL`.
public struct CommandPattern: Hashable, Sendable, CustomStringConvertible {
    public static let maxLength = 128
    /// Commands that need the app in the foreground unless the config says otherwise (canvas, camera, screen).
    /// Constant, valid patterns: `try!` cannot trap (every policy test builds them).
    public static let foregroundByDefault = ["canvas.*", "camera.*", "screen.*"].map { try! CommandPattern($0) }

    public let description: String
    /// For `a.b.*`, the bytes a match starts with (`a.b.`); empty for `*`; nil for an exact name.
    private let prefix: String?

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let pattern: String
        public let reason: String
        public var description: String { "bad command pattern \"\(pattern)\": \(reason)" }
    }

    public init(_ text: String) throws(Invalid) {
        guard !text.isEmpty else { throw Invalid(pattern: text, reason: "empty") }
        guard text.utf8.count <= Self.maxLength else {
            throw Invalid(pattern: String(text.prefix(32)) + "…", reason: "longer than \(Self.maxLength) bytes")
        }
        // Checked byte by byte: a Character such as "a" + zero-width joiner would pass a range test.
        guard
            text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D || $0 == 0x2E || $0 == 0x2A })
        else {
            throw Invalid(
                pattern: String(text.unicodeScalars.prefix(32).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" }),
                reason: "use ASCII letters, digits, '_' and '-' between dots")
        }
        // One pass over the bytes, no allocation: every invoke's command name is checked here.
        let bytes = text.utf8
        var segmentStart = bytes.startIndex
        var index = bytes.startIndex
        var wildcard = false
        while true {
            let end = index == bytes.endIndex
            if end || bytes[index] == UInt8(ascii: ".") {
                let segment = bytes[segmentStart..<index]
                guard !segment.isEmpty else { throw Invalid(pattern: text, reason: "empty segment") }
                if segment.contains(UInt8(ascii: "*")) {
                    guard segment.count == 1 else { throw Invalid(pattern: text, reason: "'*' must be a whole segment") }
                    guard end else { throw Invalid(pattern: text, reason: "'*' must be the last segment") }
                    wildcard = true
                }
                if end { break }
                segmentStart = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        description = text
        prefix = wildcard ? String(text.dropLast()) : nil
    }

    /// `*`: a valid pattern by construction.
    public static let everything = try! CommandPattern("*")

    /// Whether `command` (a plain name, no wildcards) matches: the same name, or for `a.b.*` one
    /// that starts `a.b.`; compared as bytes, ASCII case folded, with no split.
    public func matches(_ command: String) -> Bool {
        guard let prefix else { return Self.same(command, description) }
        return command.utf8.starts(with: prefix.utf8, by: Self.sameByte)
    }

    /// Whether two command names are one command: equal bytes once ASCII letters are folded.
    public static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8, by: sameByte)
    }

    /// One spelling per command, for keys of tables (ASCII lowercase; other bytes as they are).
    public static func key(_ name: String) -> String {
        guard name.utf8.contains(where: { (0x41...0x5A).contains($0) }) else { return name }
        return String(decoding: name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static func sameByte(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || ((x | 0x20) == (y | 0x20) && (0x61...0x7A).contains(x | 0x20))
    }
}
