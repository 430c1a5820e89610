/// The classes of Unicode scalars lanbridge tests text against, read from the standard library's
/// own Unicode tables: no Foundation, no ICU in the daemon (issue 40).
///
/// Each stands for the Foundation `CharacterSet` it replaced. Where Foundation's tables on Linux
/// disagree with the Unicode standard, the difference is pinned scalar by scalar in
/// `Tests/LanbridgeProtocolTests/CharacterClassEquivalenceTests.swift`.
public enum CharacterClass {
    /// What a peer's text must not carry onto a terminal or into a stored name: controls (Cc),
    /// formats (Cf: bidirectional overrides, zero-width joiners), unassigned code points and
    /// noncharacters (Cn), and what Unicode defines as drawn as nothing (Default_Ignorable_Code_Point:
    /// variation selectors, Hangul fillers), which would let two names look the same.
    /// Foundation's `controlCharacters ∪ illegalCharacters` on every scalar both know, plus those
    /// invisibles; letters newer than Foundation's tables are kept where it called them illegal.
    public static func isInvisibleOrUnassigned(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .unassigned: true
        default: scalar.properties.isDefaultIgnorableCodePoint
        }
    }

    /// Foundation's `whitespaces`: space separators (Zs), tab, and U+200B ZERO WIDTH SPACE.
    public static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || scalar.value == 0x200B || scalar.properties.generalCategory == .spaceSeparator
    }

    /// Foundation's `whitespacesAndNewlines`: the above, line and paragraph separators, LF, VT, FF,
    /// CR and NEL.
    public static func isWhitespaceOrNewline(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A...0x0D, 0x85: return true
        default: break
        }
        switch scalar.properties.generalCategory {
        case .lineSeparator, .paragraphSeparator: return true
        default: return isWhitespace(scalar)
        }
    }

    /// ASCII letters and digits.
    public static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: false
        }
    }

    /// RFC 3986's unreserved characters: ASCII letters, digits, `-`, `.`, `_`, `~`.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        isASCIIAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }
}
