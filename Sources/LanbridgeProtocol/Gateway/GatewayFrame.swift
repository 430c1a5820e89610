#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One JSON frame on the gateway link (PROTOCOL.md §12), in the agent-gateway shape:
///
///     {"type":"req",   "id":"1", "method":"node.invoke", "params":{...}}
///     {"type":"res",   "id":"1", "ok":true,  "payload":{...}}
///     {"type":"res",   "id":"1", "ok":false, "error":{"code":"TIMEOUT","message":"...","retryable":true}}
///     {"type":"event", "event":"node.event", "payload":{...}}
///
/// The same frames, one per line, are spoken on the operator's control socket.
public enum GatewayFrame: Equatable, Sendable {
    case request(id: String, method: String, params: JSONValue?)
    case response(id: String, result: Result<JSONValue?, ErrorMessage>)
    case event(name: String, payload: JSONValue?)

    public enum DecodingError: Error, Equatable, CustomStringConvertible {
        case notJSON
        case unknownType(String)
        /// A required field is missing or has the wrong type; `id` is set when the frame had one,
        /// so a request can still be answered.
        case invalid(id: String?, reason: String)

        /// The ID of the request that could not be understood, when it had one: answer it.
        public var requestID: String? {
            if case let .invalid(id, _) = self { id } else { nil }
        }

        public var description: String {
            switch self {
            case .notJSON: "frame is not a JSON object with a string \"type\""
            case let .unknownType(type): "unknown frame type \"\(type)\" (expected req, res or event)"
            case let .invalid(_, reason): "invalid frame: \(reason)"
            }
        }
    }

    fileprivate struct Wire: Codable {
        var type: String
        var id: String?
        var method: String?
        var params: JSONValue?
        var ok: Bool?
        var payload: JSONValue?
        var error: ErrorMessage?
        var event: String?
    }

    public func encoded() -> [UInt8] {
        let wire: Wire =
            switch self {
            case let .request(id, method, params): Wire(type: "req", id: id, method: method, params: params)
            case let .response(id, .success(payload)): Wire(type: "res", id: id, ok: true, payload: payload)
            case let .response(id, .failure(error)): Wire(type: "res", id: id, ok: false, error: error)
            case let .event(name, payload): Wire(type: "event", payload: payload, event: name)
            }
        return Array(try! Self.encoder.encode(wire))
    }

    /// A response frame for `answer`, as byte parts to write one after the other: a raw payload is
    /// spliced in as it is, not parsed and encoded again.
    public static func response(id: String, answer: Result<InvokePayload, ErrorMessage>) -> [ArraySlice<UInt8>] {
        switch answer {
        case let .failure(error):
            return [ArraySlice(GatewayFrame.response(id: id, result: .failure(error)).encoded())]
        case let .success(payload):
            var head = Array(#"{"id":"#.utf8)
            JSONValue.write(string: id, into: &head)
            head.append(contentsOf: #","ok":true,"payload":"#.utf8)
            return [ArraySlice(head), payload.bytes, ArraySlice(Self.responseTail)]
        }
    }

    public static func decode(_ bytes: some Collection<UInt8>) throws(DecodingError) -> GatewayFrame {
        let array = Array(bytes)
        // Strict JSON first (no repeated keys, no bad bytes), so that what the bridge acts on is
        // what any other reader of the frame would see.
        do { _ = try JSONScanner.members(["id"], in: array) } catch {
            let id = error.before["id"].flatMap { JSONScanner.string(array[$0]) }
            throw id.map { .invalid(id: $0, reason: error.description) } ?? .notJSON
        }
        // The scanner has accepted it: build the tree and read the fields from it.
        guard case let .object(fields) = JSONValue(validated: array), case let .string(type)? = fields["type"] else { throw .notJSON }
        let tagID: String?
        switch fields["id"] {
        case nil, .null?: tagID = nil
        case let .string(id)?: tagID = id
        default: throw .notJSON
        }
        guard let wire = Wire(type: type, fields: fields) else {
            // A frame with a usable type and id gets an answer.
            throw .invalid(id: tagID, reason: "a field has the wrong type")
        }
        switch wire.type {
        case "req":
            guard let id = wire.id, !id.isEmpty else { throw .invalid(id: nil, reason: "req needs a non-empty string \"id\"") }
            guard let method = wire.method else { throw .invalid(id: id, reason: "req needs a string \"method\"") }
            return .request(id: id, method: method, params: wire.params)
        case "res":
            guard let id = wire.id, let ok = wire.ok else { throw .invalid(id: wire.id, reason: "res needs \"id\" and \"ok\"") }
            if ok { return .response(id: id, result: .success(wire.payload)) }
            guard let error = wire.error else { throw .invalid(id: id, reason: "res with ok=false needs \"error\"") }
            return .response(id: id, result: .failure(error))
        case "event":
            guard let name = wire.event else { throw .invalid(id: nil, reason: "event needs a string \"event\"") }
            return .event(name: name, payload: wire.payload)
        default:
            throw .unknownType(wire.type)
        }
    }

    private static var encoder: JSONEncoder { LanbridgeJSON.compact }
    private static let responseTail = Array(#","type":"res"}"#.utf8)
}

/// Reading typed fields out of a parsed object, where absent and null mean the same.
private struct Fields {
    let fields: [String: JSONValue]

    /// `.some(nil)` when absent or null, `.some(value)` when of the type, nil when of another type.
    func optional<T>(_ key: String, _ cast: (JSONValue) -> T?) -> T?? {
        guard let value = fields[key], value != .null else { return .some(nil) }
        return cast(value).map { .some($0) } ?? nil
    }

    func string(_ key: String) -> String?? { optional(key) { if case let .string(s) = $0 { s } else { nil } } }
    func bool(_ key: String) -> Bool?? { optional(key) { if case let .bool(b) = $0 { b } else { nil } } }
    func any(_ key: String) -> JSONValue? { fields[key].flatMap { $0 == .null ? nil : $0 } }
}

extension GatewayFrame.Wire {
    /// The frame's fields with the types §12.2 gives them (null is absent); nil if one is wrong.
    init?(type: String, fields: [String: JSONValue]) {
        let f = Fields(fields: fields)
        guard let id = f.string("id"), let method = f.string("method"), let event = f.string("event"), let ok = f.bool("ok"),
            let error = f.optional("error", ErrorMessage.init(json:))
        else { return nil }
        self.init(type: type, id: id, method: method, params: f.any("params"), ok: ok, payload: f.any("payload"), error: error, event: event)
    }
}

extension ErrorMessage {
    /// An error object as §12.2 gives it: `code` and `message` strings, optional `details`,
    /// `retryable` and an integral `retryAfterMs`.
    init?(json: JSONValue) {
        guard case let .object(fields) = json, case let .string(code)? = fields["code"], case let .string(message)? = fields["message"] else { return nil }
        let f = Fields(fields: fields)
        guard let retryable = f.bool("retryable"),
            let retryAfterMs = f.optional("retryAfterMs", { if case let .number(n) = $0, n == n.rounded(), abs(n) < 1e15 { Int(n) } else { nil } })
        else { return nil }
        self.init(code: code, message: message, details: f.any("details"), retryable: retryable, retryAfterMs: retryAfterMs)
    }
}

/// The methods and events of the gateway link (PROTOCOL.md §12).
public enum GatewayMethod {
    // gateway → bridge: `ControlMethod`'s table, with the control socket's
    // bridge → gateway, on behalf of a node
    public static let agent = "agent"
    public static let systemEvent = "system-event"
    /// What a node may call toward the gateway; anything else is FORBIDDEN at the bridge.
    public static let nodeCallable: Set<String> = [agent, systemEvent]

    // events, bridge → gateway
    public static let helloEvent = "bridge.hello"
    public static let nodeEvent = "node.event"
    /// Sent once a backed-up link drains: how many events the bridge could not send meanwhile.
    public static let droppedEvent = "bridge.events-dropped"
}
