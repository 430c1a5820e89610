#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// The messages of a lanbridge session (PROTOCOL.md §9). Hex strings carry binary values.

// MARK: - Bridge → node, right after the handshake

/// The bridge's first message. `paired` tells the node whether it may do more than pair.
public struct Welcome: SessionMessage {
    public static let type = "welcome"
    public var bridgeName: String
    public var paired: Bool
    /// The node's own ID, as the bridge sees it.
    public var nodeId: Fingerprint
    /// Where the node may dial the bridge, best first (`host:port`, at most 4): sent only with
    /// `paired: true`. Hints to remember; the pinned key decides.
    public var addresses: [String]?
    /// The agent's canvas, when the bridge has a canvas host (§9.7): sent only with `paired: true`.
    public var canvas: CanvasAccess?
    public init(bridgeName: String, paired: Bool, nodeId: Fingerprint) {
        (self.bridgeName, self.paired, self.nodeId) = (bridgeName, paired, nodeId)
    }
}

// MARK: - Pairing by code (§9.2)

/// node → bridge: who I am, and my commitment to a nonce (`SHA-256(label || h || Nn)`, hex).
public struct PairRequest: SessionMessage {
    public static let type = "pair.request"
    public var details: NodeDetails
    public var commitment: String
    public init(details: NodeDetails, commitment: String) {
        (self.details, self.commitment) = (details, commitment)
    }
}

/// bridge → node: the request ID and the bridge's nonce `Nb` (hex), sent only after the commitment.
public struct PairChallenge: SessionMessage {
    public static let type = "pair.challenge"
    public var requestId: String
    public var nonce: String
    public var expiresAt: Date
    public init(requestId: String, nonce: String, expiresAt: Date) {
        (self.requestId, self.nonce, self.expiresAt) = (requestId, nonce, expiresAt)
    }
}

/// node → bridge: the nonce `Nn` (hex) it committed to.
public struct PairReveal: SessionMessage {
    public static let type = "pair.reveal"
    public var nonce: String
    public init(nonce: String) { self.nonce = nonce }
}

/// bridge → node: the commitment checked out; the request waits for the operator.
public struct PairPending: SessionMessage {
    public static let type = "pair.pending"
    public var requestId: String
    public var expiresAt: Date
    public init(requestId: String, expiresAt: Date) { (self.requestId, self.expiresAt) = (requestId, expiresAt) }
}

/// bridge → node: the operator's decision, or expiry. After anything but `approved` the bridge closes.
public struct PairResolved: SessionMessage {
    public enum Outcome: String, Codable, Sendable { case approved, rejected, expired }
    public static let type = "pair.resolved"
    public var outcome: Outcome
    public var nodeId: Fingerprint
    /// With `approved`: as `Welcome.addresses`.
    public var addresses: [String]?
    /// With `approved`: as `Welcome.canvas`.
    public var canvas: CanvasAccess?
    public init(outcome: Outcome, nodeId: Fingerprint) { (self.outcome, self.nodeId) = (outcome, nodeId) }
}

// MARK: - Pairing by invite (§9.3)

/// node → bridge, inside an XXpsk3 session: the invite secret (proving it holds more than the
/// stored hash) and who it is.
public struct InviteRedeem: SessionMessage {
    public static let type = "invite.redeem"
    public var secret: String
    public var details: NodeDetails
    public init(secret: String, details: NodeDetails) { (self.secret, self.details) = (secret, details) }
}

// MARK: - Always allowed

/// A structured error: `code` is stable (PROTOCOL.md §9.5, §12.6), `message` is for people.
/// The same shape travels to nodes, to the gateway and to `lanbridge nodes invoke`.
public struct ErrorMessage: SessionMessage, Error {
    public static let type = "error"
    public var code: String
    public var message: String
    public var details: JSONValue?
    public var retryable: Bool?
    public var retryAfterMs: Int?
    public init(code: String, message: String, details: JSONValue? = nil, retryable: Bool? = nil, retryAfterMs: Int? = nil) {
        (self.code, self.message, self.details, self.retryable, self.retryAfterMs) = (code, message, details, retryable, retryAfterMs)
    }

    // Session (§9.5)
    public static let notPaired = "NOT_PAIRED"
    public static let pairingExpired = "PAIRING_EXPIRED"
    public static let pairingRejected = "PAIRING_REJECTED"
    public static let badMessage = "BAD_MESSAGE"
    public static let pairingFailed = "PAIRING_FAILED"
    public static let revoked = "REVOKED"
    public static let replaced = "SESSION_REPLACED"

    // Gateway link and invokes (§12.6)
    public static let invalidRequest = "INVALID_REQUEST"
    public static let unknownMethod = "UNKNOWN_METHOD"
    public static let forbidden = "FORBIDDEN"
    public static let nodeNotFound = "NODE_NOT_FOUND"
    public static let nodeNotConnected = "NODE_NOT_CONNECTED"
    /// The node does not read what it was sent: more than `limits.nodeQueueBytes` wait for it.
    public static let nodeBacklogged = "NODE_BACKLOGGED"
    public static let backgroundUnavailable = "NODE_BACKGROUND_UNAVAILABLE"
    /// `node.invoke` with `hold`, over a bound of held invokes (per node, in all, or bytes).
    public static let holdLimit = "HOLD_LIMIT"
    public static let rateLimited = "RATE_LIMITED"
    public static let payloadTooLarge = "PAYLOAD_TOO_LARGE"
    public static let timeout = "TIMEOUT"
    public static let unavailable = "UNAVAILABLE"
    public static let commandFailed = "COMMAND_FAILED"
    /// The node's result was not strict JSON (RFC 8259, UTF-8, no repeated keys).
    public static let invalidResult = "INVALID_RESULT"
    /// The asker cancelled the invoke (`node.invoke.cancel`) before the node answered.
    public static let cancelled = "CANCELLED"

    // `details.reason` of an invoke an ask rule matched (§12.6): FORBIDDEN, not retryable, for
    // the first two; HOLD_LIMIT, retryable, for the third.
    /// The operator said no.
    public static let askedDenied = "ASKED_DENIED"
    /// Nobody answered within `limits.askTimeoutMs`.
    public static let askTimeout = "ASK_TIMEOUT"
    /// Too many invokes already wait for the operator (`limits.askPerNode`, `askTotal`).
    public static let askLimit = "ASK_LIMIT"
}

/// Keepalive, either direction; the receiver answers with `Pong` of the same `id`.
public struct Ping: SessionMessage {
    public static let type = "ping"
    public var id: Int
    public init(id: Int) { self.id = id }
}

public struct Pong: SessionMessage {
    public static let type = "pong"
    public var id: Int
    public init(id: Int) { self.id = id }
}

/// node → bridge: the app moved to the foreground or the background.
public struct AppState: SessionMessage {
    public static let type = "state"
    public var foreground: Bool
    public init(foreground: Bool) { self.foreground = foreground }
}

/// bridge → node: the operator revoked this pairing; the bridge closes next.
public struct Revoked: SessionMessage {
    public static let type = "revoked"
    public var nodeId: Fingerprint
    public init(nodeId: Fingerprint) { self.nodeId = nodeId }
}
