#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Commands relayed to a paired node, and what it sends back (PROTOCOL.md §9.4).

/// bridge → node: run `command` with `params`; answer with an `InvokeResult` of the same `id`.
public struct Invoke: SessionMessage {
    public static let type = "invoke"
    public var id: String
    public var command: String
    public var params: JSONValue?
    /// How long the bridge waits for the result; a node may give up on its own after this.
    public var timeoutMs: Int?
    public init(id: String, command: String, params: JSONValue? = nil, timeoutMs: Int? = nil) {
        (self.id, self.command, self.params, self.timeoutMs) = (id, command, params, timeoutMs)
    }
}

extension Invoke {
    /// Reads a message `SessionMessages.read` has validated, with the field types the synthesized
    /// decoder requires: `id` and `command` strings, `params` any value or null, `timeoutMs` an
    /// integer or null; other members are ignored.
    init(validated bytes: [UInt8]) throws(SessionMessageError) {
        guard case let .object(fields) = JSONValue(validated: bytes) else { throw .notJSON }
        guard case let .string(id)? = fields["id"], case let .string(command)? = fields["command"] else {
            throw .invalid(type: Self.type, reason: "needs string \"id\" and \"command\"")
        }
        let timeoutMs: Int?
        switch fields["timeoutMs"] {
        case nil, .null?: timeoutMs = nil
        case let .number(n)? where n == n.rounded() && n >= -9.0e15 && n <= 9.0e15: timeoutMs = Int(n)
        default: throw .invalid(type: Self.type, reason: "timeoutMs must be an integer")
        }
        self.init(id: id, command: command, params: fields["params"].flatMap { $0 == .null ? nil : $0 }, timeoutMs: timeoutMs)
    }
}

/// bridge → node: whoever asked gave up on an `Invoke`. The node stops its handler if it still
/// runs; a result it sends anyway is dropped (PROTOCOL.md §9.4).
public struct InvokeCancel: SessionMessage {
    public static let type = "invoke.cancel"
    public var id: String
    public init(id: String) { self.id = id }
}

/// node → bridge: the outcome of an `Invoke`.
public struct InvokeResult: SessionMessage {
    public static let type = "invoke.result"
    public var id: String
    public var ok: Bool
    public var payload: JSONValue?
    /// Embedded as a plain object (the `type` tag is only on top-level messages).
    public var error: ErrorMessage?
    public init(id: String, payload: JSONValue) { (self.id, ok, self.payload, error) = (id, true, payload, nil) }
    public init(id: String, error: ErrorMessage) { (self.id, ok, payload, self.error) = (id, false, nil, error) }
    init(id: String, ok: Bool, payload: JSONValue?, error: ErrorMessage?) { (self.id, self.ok, self.payload, self.error) = (id, ok, payload, error) }
}

/// node → bridge: something happened on the node that the gateway should hear about.
public struct NodeEvent: SessionMessage {
    public static let type = "event"
    public var event: String
    public var payload: JSONValue?
    public init(event: String, payload: JSONValue? = nil) { (self.event, self.payload) = (event, payload) }
}

/// node → bridge: a call toward the gateway. Only `agent` (which needs `idempotencyKey`) and
/// `system-event` pass; the bridge answers anything else `FORBIDDEN` itself (PROTOCOL.md §12.5).
public struct GatewayCall: SessionMessage {
    public static let type = "gateway.call"
    public var id: String
    public var method: String
    public var params: JSONValue?
    public var idempotencyKey: String?
    public init(id: String, method: String, params: JSONValue? = nil, idempotencyKey: String? = nil) {
        (self.id, self.method, self.params, self.idempotencyKey) = (id, method, params, idempotencyKey)
    }
}

/// bridge → node: the answer to a `GatewayCall` of the same `id`.
public struct GatewayCallResult: SessionMessage {
    public static let type = "gateway.result"
    public var id: String
    public var ok: Bool
    public var payload: JSONValue?
    public var error: ErrorMessage?
    public init(id: String, result: Result<JSONValue?, ErrorMessage>) {
        self.id = id
        switch result {
        case let .success(payload): (ok, self.payload, error) = (true, payload, nil)
        case let .failure(error): (ok, payload, self.error) = (false, nil, error)
        }
    }
}

extension InvokeResult {
    /// An `invoke.result` as the bridge takes it in: the small fields parsed, the payload kept as
    /// the bytes it arrived in (it may be megabytes of base64 that only need passing on).
    public struct Received: Sendable, Equatable {
        public let id: String
        public let ok: Bool
        public let payload: InvokePayload
        public let error: ErrorMessage?
    }

    /// Reads an `invoke.result` without materialising its payload: validated whole (strict JSON,
    /// as `SessionMessages.read`), then only the small fields decoded.
    public static func received(from bytes: [UInt8]) throws(SessionMessageError) -> Received {
        guard case let .result(received) = try SessionMessages.read(bytes) else { throw .invalid(type: type, reason: "not an \(type) message") }
        return received
    }

    /// `bytes` passed `JSONScanner`, which found where its members are: only `id`, `ok` and
    /// `error` are read, from their own bytes; the payload, however large, is not parsed again.
    static func received(validated bytes: [UInt8], members: [String: Range<Int>]) throws(SessionMessageError) -> Received {
        func invalid(_ reason: String) -> SessionMessageError { .invalid(type: type, reason: reason) }
        guard let idRange = members["id"], let id = JSONScanner.string(bytes[idRange]) else { throw invalid("\"id\" must be a string") }
        let ok: Bool
        switch members["ok"].map({ bytes[$0] }) {
        case let token? where token.elementsEqual("true".utf8): ok = true
        case let token? where token.elementsEqual("false".utf8): ok = false
        default: throw invalid("\"ok\" must be true or false")
        }
        var error: ErrorMessage?
        if let range = members["error"], !bytes[range].elementsEqual("null".utf8) {
            guard let decoded = ErrorMessage(json: JSONValue(validated: Array(bytes[range]))) else {
                throw invalid("\"error\" must have a string code and message")
            }
            error = decoded
        }
        let payload = members["payload"].map { InvokePayload.raw(bytes[$0]) } ?? .value(nil)
        return Received(id: id, ok: ok, payload: payload, error: error)
    }

    public var received: Received { Received(id: id, ok: ok, payload: .value(payload), error: error) }
}
