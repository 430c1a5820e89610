/// The few string operations lanbridge took from Foundation, on Unicode scalars as Foundation
/// works (a `.` followed by a combining mark is still a `.`), so an escape cannot be dodged by
/// making a character that only looks different.
extension StringProtocol {
    /// The text without leading and trailing scalars for which `trim` is true.
    public func trimming(_ trim: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trim($0) }), let last = scalars.lastIndex(where: { !trim($0) }) else { return "" }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }

    /// Without leading and trailing whitespace (Foundation's `.whitespaces`).
    public func trimmingWhitespace() -> String { trimming(CharacterClass.isWhitespace) }

    /// Without leading and trailing whitespace and line breaks (`.whitespacesAndNewlines`).
    public func trimmingWhitespaceAndNewlines() -> String { trimming(CharacterClass.isWhitespaceOrNewline) }

    /// Each scalar for which `replacement` returns text replaced by that text; the others kept.
    public func replacingScalars(_ replacement: (Unicode.Scalar) -> String?) -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            if let text = replacement(scalar) { out += text } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// Every `scalar` replaced by `text`.
    public func replacing(scalar: Unicode.Scalar, with text: String) -> String {
        replacingScalars { $0 == scalar ? text : nil }
    }

    /// Left-aligned in a column `width` characters wide: spaces added, never cut.
    public func padded(to width: Int) -> String {
        count >= width ? String(self) : self + String(repeating: " ", count: width - count)
    }
}
