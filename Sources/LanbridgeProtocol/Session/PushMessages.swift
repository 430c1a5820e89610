// Where to wake a node (PROTOCOL.md §9.6).

/// node → bridge: a push provider's token for this node, so the bridge (or its gateway) can wake
/// it. The latest registration replaces the one before. The bridge answers `push.result` of the
/// same `id`.
public struct PushRegister: SessionMessage {
    public static let type = "push.register"
    public var id: String
    /// `apns`, `fcm`, `webpush`, `ntfy`, or another lowercase name a wake hook knows.
    public var provider: String
    /// Sensitive: stored 0600, never logged, never shown.
    public var token: String
    /// For `apns`: `sandbox` or `production`.
    public var environment: String?
    /// For `apns`: the app's bundle ID.
    public var topic: String?

    public init(id: String, provider: String, token: String, environment: String? = nil, topic: String? = nil) {
        (self.id, self.provider, self.token, self.environment, self.topic) = (id, provider, token, environment, topic)
    }

    public static let maxTokenBytes = 4096
    public static let maxTopicBytes = 255

    /// The registration, checked whole; a refusal says which field and why (INVALID_REQUEST).
    public func validated() throws(ErrorMessage) -> PushRegistration {
        func refuse(_ why: String) -> ErrorMessage { ErrorMessage(code: ErrorMessage.invalidRequest, message: "push.register: \(why)") }
        // Printable ASCII without spaces: what APNs, FCM and web push tokens are made of, and
        // nothing a log line or a hook's JSON could be confused by.
        func visible(_ text: String) -> Bool { text.utf8.allSatisfy { (0x21...0x7E).contains($0) } }
        guard (1...32).contains(provider.utf8.count), provider.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else {
            throw refuse("provider must be 1–32 of a–z, 0–9 and -")
        }
        guard (1...Self.maxTokenBytes).contains(token.utf8.count), visible(token) else {
            throw refuse("token must be 1–\(Self.maxTokenBytes) visible ASCII characters")
        }
        if let environment, !((1...32).contains(environment.utf8.count) && visible(environment)) {
            throw refuse("environment must be 1–32 visible ASCII characters")
        }
        if let topic, !((1...Self.maxTopicBytes).contains(topic.utf8.count) && visible(topic)) {
            throw refuse("topic must be 1–\(Self.maxTopicBytes) visible ASCII characters")
        }
        if provider == PushRegistration.apns {
            // What OpenClaw's gateway accepts (src/infra/push-apns.ts: isLikelyApnsToken, topic required).
            guard (32...512).contains(token.utf8.count), token.utf8.allSatisfy({ Hex.isDigit($0) }) else { throw refuse("an APNs token is 32–512 hex digits") }
            guard environment == nil || environment == "sandbox" || environment == "production" else {
                throw refuse("an APNs environment is sandbox or production")
            }
            guard topic != nil else { throw refuse("an APNs registration needs its topic (the app's bundle ID)") }
        }
        return PushRegistration(provider: provider, token: token, environment: environment, topic: topic)
    }
}

/// bridge → node: the answer to a `PushRegister` of the same `id`.
public struct PushResult: SessionMessage {
    public static let type = "push.result"
    public var id: String
    public var ok: Bool
    public var error: ErrorMessage?
    public init(id: String, error: ErrorMessage? = nil) { (self.id, ok, self.error) = (id, error == nil, error) }
}

/// A checked push registration, as the bridge keeps it.
public struct PushRegistration: Codable, Sendable, Equatable {
    public static let apns = "apns"
    public var provider: String
    public var token: String
    public var environment: String?
    public var topic: String?

    public init(provider: String, token: String, environment: String? = nil, topic: String? = nil) {
        (self.provider, self.token, self.environment, self.topic) = (provider, token, environment, topic)
    }
}
