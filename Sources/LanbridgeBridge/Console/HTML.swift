import FoundationEssentials
import LanbridgeProtocol

/// Server-rendered HTML. Every value that is not a literal of ours goes through `escape`, in text
/// and in attribute values alike (attributes are always double-quoted).
enum HTML {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A path segment or query value (node IDs, request IDs, filters) in a link.
    static func component(_ text: String) -> String {
        PercentEncoding.encode(text)
    }

    /// A form that posts to `action` with the session's CSRF token.
    static func form(_ action: String, csrf: String, class cls: String = "inline", _ body: String) -> String {
        "<form method=\"post\" action=\"\(escape(action))\" class=\"\(cls)\"><input type=\"hidden\" name=\"csrf\" value=\"\(escape(csrf))\">\(body)</form>"
    }

    static func hidden(_ name: String, _ value: String) -> String {
        "<input type=\"hidden\" name=\"\(escape(name))\" value=\"\(escape(value))\">"
    }

    static func list(_ items: [String]) -> String {
        items.isEmpty ? "<span class=\"none\">none</span>" : items.map { "<code>\(escape($0))</code>" }.joined(separator: " ")
    }

    static func duration(_ seconds: Double) -> String {
        let s = max(0, Int(seconds))
        if s < 90 { return "\(s) s" }
        if s < 5400 { return "\(s / 60) min" }
        if s < 172_800 { return "\(s / 3600) h" }
        return "\(s / 86400) d"
    }

    static func time(_ date: Date) -> String { ISO8601Text.string(date) }
}
