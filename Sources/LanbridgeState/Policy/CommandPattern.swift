/// A command name pattern in an access rule: `canvas.snapshot`, `canvas.*` or `*`.
/// Segments are lowercase letters, digits, `_` and `-`, joined by dots; `*` may stand only as the
/// last segment (or alone), and matches one or more remaining segments.
public struct CommandPattern: Hashable, Sendable, CustomStringConvertible {
    public let description: String
    private let segments: [Substring]

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let pattern: String
        public let reason: String
        public var description: String { "bad command pattern \"\(pattern)\": \(reason)" }
    }

    public init(_ text: String) throws(Invalid) {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty else { throw Invalid(pattern: text, reason: "empty") }
        for (index, segment) in segments.enumerated() {
            if segment == "*" {
                guard index == segments.count - 1 else { throw Invalid(pattern: text, reason: "'*' must be the last segment") }
                continue
            }
            guard !segment.isEmpty else { throw Invalid(pattern: text, reason: "empty segment") }
            guard segment.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }) else {
                throw Invalid(pattern: text, reason: "use lowercase letters, digits, '_' and '-' between dots")
            }
        }
        description = text
        self.segments = segments
    }

    public static let everything = try! CommandPattern("*")

    /// Whether `command` (a plain name, no wildcards) matches.
    public func matches(_ command: String) -> Bool {
        let parts = command.split(separator: ".", omittingEmptySubsequences: false)
        if segments.last == "*" {
            let fixed = segments.dropLast()
            return parts.count > fixed.count && zip(fixed, parts).allSatisfy { $0 == $1 }
        }
        return parts == segments
    }
}
