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
        var s = s
        s.withUTF8 { bytes in
            // Runs that need no escape are copied whole.
            var run = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
                run = index + 1
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0..<0x20:
                    out.append(contentsOf: "u00".utf8)
                    out.append(hexDigits[Int(byte >> 4)])
                    out.append(hexDigits[Int(byte & 0xF)])
                default: out.append(byte)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// A message written member by member, for the hot path's messages: the caller gives the keys in
/// sorted order, as `serialized` (and the encoder) write them, and `type` last.
struct WireObject {
    private(set) var bytes: [UInt8]
    private var empty = true

    init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ key: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        JSONValue.write(string: key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ key: String, _ value: String) {
        self.key(key)
        JSONValue.write(string: value, into: &bytes)
    }

    mutating func value(_ key: String, _ value: JSONValue?) {
        guard let value else { return }
        self.key(key)
        value.write(into: &bytes)
    }

    /// Closes the object with its `type` member.
    consuming func closed(type: String) -> [UInt8] {
        string("type", type)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}

extension Invoke {
    /// The message as the wire carries it; the bridge sends one per relayed invoke.
    var wireBytes: [UInt8] {
        var object = WireObject(capacity: 96 + command.utf8.count + id.utf8.count)
        object.string("command", command)
        object.string("id", id)
        object.value("params", params)
        object.value("timeoutMs", timeoutMs.map { .number(Double($0)) })
        return object.closed(type: Self.type)
    }
}

extension InvokeResult {
    /// A successful result as the wire carries it; nil for a failure, which goes through the
    /// encoder with its error object.
    var wireBytes: [UInt8]? {
        guard ok, error == nil else { return nil }
        var object = WireObject()
        object.string("id", id)
        object.value("ok", true)
        object.value("payload", payload)
        return object.closed(type: Self.type)
    }
}
