import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

package typealias InvokeAnswer = Result<InvokePayload, ErrorMessage>

/// `node.invoke` as the gateway or the operator asked for it, before any check.
package struct InvokeRequest: Sendable, Equatable {
    package var node: String
    package var command: String
    package var params: JSONValue?
    package var timeoutMs: Int?
    package var idempotencyKey: String?
    /// `hold: {maxMs}`: wait this long for the node, when it is away or in the background.
    package var holdMs: Int?

    /// What an idempotency key is bound to: the node as named, the command and the parameters.
    package var digest: [UInt8] {
        SHA256.hash(JSONValue.array([.string(node), .string(command), params ?? .null]).serialized)
    }

    /// Reads the request's `params` (PROTOCOL.md §12.3): `idempotencyKey` is required; anything
    /// malformed is INVALID_REQUEST.
    package init(params: JSONValue?) throws(ErrorMessage) {
        let method = ControlMethod.nodeInvoke.name
        switch params?["timeoutMs"] {
        case nil, .null?: timeoutMs = nil
        case let .number(n)? where n >= 1 && n <= Double(Int32.max): timeoutMs = Int(n)
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "timeoutMs must be a positive number of milliseconds")
        }
        switch params?["hold"] {
        case nil, .null?: holdMs = nil
        case let .object(hold)? where hold.count == 1 && hold["maxMs"]?.isWholeMilliseconds == true:
            if case let .number(n)? = hold["maxMs"] { holdMs = Int(n) }
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "hold must be {\"maxMs\": a positive whole number of milliseconds}")
        }
        switch params?["params"] {
        case nil, .null?, .object?: self.params = params?["params"]
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "params must be an object")
        }
        node = try Self.string("nodeId", in: params, method: method)!
        command = try Self.string("command", in: params, method: method)!
        idempotencyKey = try Self.string("idempotencyKey", in: params, method: method)
    }

    package init(node: String, command: String, params: JSONValue? = nil, timeoutMs: Int? = nil, idempotencyKey: String? = nil, holdMs: Int? = nil) {
        (self.node, self.command, self.params, self.timeoutMs, self.idempotencyKey) = (node, command, params, timeoutMs, idempotencyKey)
        self.holdMs = holdMs
    }

    /// A whole, non-negative number field of a request's params, or nil when absent.
    package static func int(_ key: String, in params: JSONValue?, method: String) throws(ErrorMessage) -> Int? {
        switch params?[key] {
        case nil, .null?: return nil
        case let .number(n)? where n >= 0 && n <= Double(Int32.max) && n == n.rounded(): return Int(n)
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method): \"\(key)\" must be a whole number, 0 or more")
        }
    }

    /// A non-empty string field of a request's params.
    package static func string(_ key: String, in params: JSONValue?, method: String, required: Bool = true) throws(ErrorMessage) -> String? {
        switch params?[key] {
        case let .string(value)? where !value.isEmpty: return value
        case nil where !required, .null? where !required: return nil
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method) needs a non-empty string \"\(key)\"")
        }
    }
}

private extension JSONValue {
    package var isWholeMilliseconds: Bool {
        guard case let .number(n) = self else { return false }
        return n >= 1 && n <= Double(Int32.max) && n == n.rounded()
    }
}
