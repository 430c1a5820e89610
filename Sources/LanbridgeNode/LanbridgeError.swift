import LanbridgeProtocol

/// A failure with one of the protocol's codes (PROTOCOL.md §9.5 and §12.6), as `NodeClient.call`
/// throws it and as a handler throws it to answer an invoke with that code.
public struct LanbridgeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The protocol's code: `FORBIDDEN`, `RATE_LIMITED`, `TIMEOUT`, `UNAVAILABLE`, … (or the node's own).
    public var code: String
    /// What happened, for people.
    public var message: String
    /// Whether the same call may succeed later.
    public var retryable: Bool
    /// When to try again, if the bridge said.
    public var retryAfterMs: Int?
    /// Structured detail, as the bridge or gateway sent it.
    public var details: JSONValue?

    /// An error to throw from a handler (answered with `code`), or to match on.
    public init(code: String, message: String, retryable: Bool = false, retryAfterMs: Int? = nil, details: JSONValue? = nil) {
        (self.code, self.message, self.retryable, self.retryAfterMs, self.details) = (code, message, retryable, retryAfterMs, details)
    }

    /// The error a bridge or gateway sent, as a Swift error.
    public init(_ error: ErrorMessage) {
        self.init(code: error.code, message: error.message, retryable: error.retryable ?? false, retryAfterMs: error.retryAfterMs, details: error.details)
    }

    /// The error as the wire carries it (PROTOCOL.md §9.5).
    public var errorMessage: ErrorMessage {
        ErrorMessage(code: code, message: message, details: details, retryable: retryable ? true : nil, retryAfterMs: retryAfterMs)
    }

    /// "FORBIDDEN: system.run is not allowed".
    public var description: String { "\(code): \(message)" }

    /// The bridge or gateway did not answer within the call's timeout.
    public static let timeout = ErrorMessage.timeout
    /// Not connected, or the connection closed before the answer.
    public static let unavailable = ErrorMessage.unavailable
    /// A handler's params did not decode as the handler's type.
    public static let invalidParams = "INVALID_PARAMS"
    /// A handler threw something other than a `LanbridgeError`.
    public static let commandFailed = ErrorMessage.commandFailed
}
