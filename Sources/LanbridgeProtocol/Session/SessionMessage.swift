#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An application message inside a secure session: a JSON object whose `type` names it.
/// Each message is its own small struct; `SessionMessages.decode` finds it by `type`.
public protocol SessionMessage: Codable, Sendable, Equatable {
    static var type: String { get }
}

public enum SessionMessageError: Error, Equatable, CustomStringConvertible {
    case notJSON
    /// Not strict JSON (`JSONScanner`); `type` and `id` if they could be read before the error.
    case malformed(JSONScanner.Invalid, type: String?, id: String?)
    case unknownType(String)
    case invalid(type: String, reason: String)

    public var description: String {
        switch self {
        case .notJSON: "message is not a JSON object with a string \"type\""
        case let .malformed(error, _, _): "message is \(error)"
        case let .unknownType(type): "unknown message type \"\(type)\""
        case let .invalid(type, reason): "invalid \"\(type)\" message: \(reason)"
        }
    }
}

public enum SessionMessages {
    /// Every message type this build understands (PROTOCOL.md §9).
    public static let known: [any SessionMessage.Type] = [
        PairRequest.self, PairChallenge.self, PairReveal.self, PairPending.self, PairResolved.self,
        InviteRedeem.self, Welcome.self, ErrorMessage.self, Ping.self, Pong.self, AppState.self, Revoked.self,
        Invoke.self, InvokeResult.self, InvokeCancel.self, NodeEvent.self, GatewayCall.self, GatewayCallResult.self,
        PushRegister.self, PushResult.self, CanvasRefresh.self, CanvasGrant.self,
    ]
    private static let byType: [String: any SessionMessage.Type] = Dictionary(uniqueKeysWithValues: known.map { ($0.type, $0) })

    private struct TypeTag: Encodable { let type: String }

    /// Writes the tag and the message's fields into one object: {"type": ..., fields...}.
    private struct Tagged<M: SessionMessage>: Encodable {
        let message: M
        func encode(to encoder: any Encoder) throws {
            try TypeTag(type: M.type).encode(to: encoder)
            try message.encode(to: encoder)
        }
    }

    public static func encode(_ message: some SessionMessage) -> [UInt8] {
        // The hot path, written by hand: the bridge sends an invoke, a node answers it.
        if let invoke = message as? Invoke { return invoke.wireBytes }
        if let result = message as? InvokeResult, let bytes = result.wireBytes { return bytes }
        if let encoded = try? LanbridgeJSON.compact.encode(Tagged(message: message)) { return Array(encoded) }
        // JSONEncoder refuses only non-finite numbers, which nothing read by the scanner holds; should
        // one get in anyway, the peer hears an error instead of the process trapping.
        return JSONValue.object([
            "type": .string(ErrorMessage.type), "code": .string(ErrorMessage.badMessage),
            "message": .string("the bridge could not encode a \(type(of: message).type) message"),
        ]).serialized
    }

    /// A message as the bridge takes it in: decided once, by one reader. An `invoke.result` keeps
    /// its payload as the bytes it arrived in (validated, to be spliced on); anything else is decoded.
    public enum Inbound: Sendable {
        case result(InvokeResult.Received)
        case message(any SessionMessage)
    }

    /// Validates the whole message as strict JSON (`JSONScanner`) and finds its type in the same
    /// pass; only then is it decoded, so no two parsers can read it differently.
    public static func read(_ bytes: [UInt8]) throws(SessionMessageError) -> Inbound {
        let members: [String: Range<Int>]
        do { members = try JSONScanner.members(["type", "payload", "id", "ok", "error"], in: bytes) } catch {
            func string(_ key: String) -> String? { error.before[key].flatMap { JSONScanner.string(bytes[$0]) } }
            throw .malformed(error, type: string("type"), id: string("id"))
        }
        guard let typeRange = members["type"], let type = JSONScanner.string(bytes[typeRange]) else { throw .notJSON }
        if type == InvokeResult.type { return .result(try InvokeResult.received(validated: bytes, members: members)) }
        return .message(try decode(validated: bytes, type: type))
    }

    /// `read`'s outcome as a value, to carry from the thread that read it to the one that acts on it.
    public typealias Checked = Result<Inbound, SessionMessageError>

    public static func check(_ bytes: [UInt8]) -> Checked {
        do throws(SessionMessageError) { return .success(try read(bytes)) } catch { return .failure(error) }
    }

    /// Decodes any message (a node reads the bridge's this way); strict JSON first, as `read`.
    public static func decode(_ bytes: [UInt8]) throws(SessionMessageError) -> any SessionMessage {
        switch try read(bytes) {
        case let .message(message): return message
        case let .result(received):
            guard case let .raw(payload) = received.payload, let value = try? LanbridgeJSON.decoder.decode(JSONValue.self, from: Data(payload)) else {
                return InvokeResult(id: received.id, ok: received.ok, payload: nil, error: received.error)
            }
            return InvokeResult(id: received.id, ok: received.ok, payload: value, error: received.error)
        }
    }

    private static func decode(validated bytes: [UInt8], type: String) throws(SessionMessageError) -> any SessionMessage {
        // A node reads one per invoke: from the scanner's tree, not through JSONDecoder.
        if type == Invoke.type { return try Invoke(validated: bytes) }
        guard let messageType = byType[type] else { throw .unknownType(type) }
        do {
            return try LanbridgeJSON.decoder.decode(messageType, from: Data(bytes))
        } catch {
            throw .invalid(type: type, reason: "\(error)")
        }
    }
}
