import Foundation

/// An application message inside a secure session: a JSON object whose `type` names it.
/// Each message is its own small struct; `SessionMessages.decode` finds it by `type`.
public protocol SessionMessage: Codable, Sendable, Equatable {
    static var type: String { get }
}

public enum SessionMessageError: Error, Equatable, CustomStringConvertible {
    case notJSON
    case unknownType(String)
    case invalid(type: String, reason: String)

    public var description: String {
        switch self {
        case .notJSON: "message is not a JSON object with a string \"type\""
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
        Invoke.self, InvokeResult.self, NodeEvent.self, GatewayCall.self, GatewayCallResult.self,
    ]
    private static let byType: [String: any SessionMessage.Type] = Dictionary(uniqueKeysWithValues: known.map { ($0.type, $0) })

    private struct TypeTag: Codable { let type: String }

    /// Writes the tag and the message's fields into one object: {"type": ..., fields...}.
    private struct Tagged<M: SessionMessage>: Encodable {
        let message: M
        func encode(to encoder: any Encoder) throws {
            try TypeTag(type: M.type).encode(to: encoder)
            try message.encode(to: encoder)
        }
    }

    public static func encode(_ message: some SessionMessage) -> [UInt8] {
        Array(try! JSONEncoder.lanbridge.encode(Tagged(message: message)))
    }

    /// The message's `type` and where its `payload` is, found in one pass without parsing the
    /// rest (type nil if there is no string "type").
    public static func peek(_ bytes: [UInt8]) -> (type: String?, payload: Range<Int>?) {
        guard let ranges = JSONScanner.valueRanges(ofKeys: ["type", "payload"], in: bytes) else { return (nil, nil) }
        let type = ranges["type"].flatMap { try? JSONDecoder().decode(String.self, from: Data(bytes[$0])) }
        return (type, ranges["payload"])
    }

    public static func decode(_ bytes: [UInt8]) throws -> any SessionMessage {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let tag = try? decoder.decode(TypeTag.self, from: data) else { throw SessionMessageError.notJSON }
        guard let type = byType[tag.type] else { throw SessionMessageError.unknownType(tag.type) }
        do {
            return try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            throw SessionMessageError.invalid(type: tag.type, reason: "\(error)")
        }
    }
}
