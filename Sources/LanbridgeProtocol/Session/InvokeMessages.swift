import Foundation

// Commands relayed to a paired node, and what it sends back (PROTOCOL.md §9.4).

/// bridge → node: run `command` with `params`; answer with an `InvokeResult` of the same `id`.
public struct Invoke: SessionMessage {
    public static let type = "invoke"
    public var id: String
    public var command: String
    public var params: JSONValue?
    public init(id: String, command: String, params: JSONValue? = nil) { (self.id, self.command, self.params) = (id, command, params) }
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
}

/// node → bridge: something happened on the node that the gateway should hear about.
public struct NodeEvent: SessionMessage {
    public static let type = "event"
    public var event: String
    public var payload: JSONValue?
    public init(event: String, payload: JSONValue? = nil) { (self.event, self.payload) = (event, payload) }
}
