/// Text a peer chose, made safe to write into a log line or onto a terminal: the one escaping
/// the daemon's log, the CLI's tables and the SDK's printing share (issue 36).
public enum SafeText {
    /// Control characters (C0, DEL, C1), line and paragraph separators and bidirectional controls
    /// become visible escapes (`\n`, `\u{1B}`); a backslash is doubled, so an escape in the input
    /// cannot pass for one made here.
    public static func escape(_ value: String) -> String {
        guard value.unicodeScalars.contains(where: needsEscape) else { return value }
        var out = ""
        out.reserveCapacity(value.utf8.count + 8)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isUnsafe(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A `key=value` field's value: escaped, and quoted when it holds a space, a quote or `=`, or is
    /// empty, so a log reader splits it where it was written.
    public static func quote(_ value: String) -> String {
        let escaped = escape(value)
        guard escaped.isEmpty || escaped.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return escaped }
        var out = "\""
        for character in escaped { out += character == "\"" ? "\\\"" : String(character) }
        return out + "\""
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool { scalar == "\\" || isUnsafe(scalar) }

    /// What a terminal or a log reader may act on: controls, and the invisible characters that
    /// reorder or break lines.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029: true  // line and paragraph separators
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true  // bidirectional controls
        default: false
        }
    }
}
