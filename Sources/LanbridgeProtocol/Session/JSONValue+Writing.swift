/// Compact JSON with sorted keys, written by hand: the same value always gives the same bytes (the
/// idempotency digest relies on it), and the bridge's hot path (every invoke it relays) does not
/// pay for `JSONEncoder`.
extension JSONValue {
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case let .bool(b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case let .number(n): Self.write(number: n, into: &out)
        case let .string(s): Self.write(string: s, into: &out)
        case let .array(elements):
            out.append(UInt8(ascii: "["))
            for (k, element) in elements.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(fields):
            out.append(UInt8(ascii: "{"))
            for (k, key) in fields.keys.sorted().enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(string: key, into: &out)
                out.append(UInt8(ascii: ":"))
                fields[key]?.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    public var serialized: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// Integers as integers; anything else as Swift's shortest round-trip form. (JSON has no
    /// infinities or NaN, and nothing read by the scanner can hold one.)
    static func write(number n: Double, into out: inout [UInt8]) {
        if n.isFinite, n == n.rounded(), abs(n) < 1e15 {
            out.append(contentsOf: String(Int64(n)).utf8)
        } else if n.isFinite {
            out.append(contentsOf: "\(n)".utf8)
        } else {
            out.append(contentsOf: "null".utf8)
        }
    }

    static func write(string s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension Invoke {
    /// The message as the wire carries it; the bridge sends one per relayed invoke.
    var wireBytes: [UInt8] {
        var fields: [String: JSONValue] = ["type": .string(Self.type), "id": .string(id), "command": .string(command)]
        if let params { fields["params"] = params }
        if let timeoutMs { fields["timeoutMs"] = .number(Double(timeoutMs)) }
        return JSONValue.object(fields).serialized
    }
}
