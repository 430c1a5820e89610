#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Any JSON value: command parameters, results and event payloads pass through the bridge as-is.
public enum JSONValue: Codable, Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case let .bool(b): try c.encode(b)
        case let .number(n): try c.encode(n)
        case let .string(s): try c.encode(s)
        case let .array(a): try c.encode(a)
        case let .object(o): try c.encode(o)
        }
    }

    /// Any Encodable value as JSON (dates as ISO 8601).
    /// A value's JSON, as the wire writes it; a value that cannot be encoded (a non-finite
    /// number) throws, never becomes `null`.
    public init(encoding value: some Encodable) throws {
        self = try LanbridgeJSON.decoder.decode(JSONValue.self, from: LanbridgeJSON.compact.encode(value))
    }

    /// The inverse of `init(encoding:)`: this JSON read as `type` (dates as ISO 8601).
    public func decoded<T: Decodable>(as type: T.Type) throws -> T {
        try LanbridgeJSON.decoder.decode(type, from: LanbridgeJSON.compact.encode(self))
    }

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements) { $1 }) }

    public subscript(key: String) -> JSONValue? {
        if case let .object(o) = self { o[key] } else { nil }
    }

    public var stringValue: String? {
        if case let .string(s) = self { s } else { nil }
    }

    public var numberValue: Double? {
        if case let .number(n) = self { n } else { nil }
    }
}
