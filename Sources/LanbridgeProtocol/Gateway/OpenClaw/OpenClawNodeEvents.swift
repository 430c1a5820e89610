/// What a lanbridge node says to the agent, as the `node.event`s an OpenClaw gateway acts on
/// (openclaw-gateway-protocol.md §4.5; OpenClaw's `src/gateway/server-node-events.ts`,
/// `handleNodeEvent`). Only the fields upstream reads are passed on.
public enum OpenClawNodeEvents {
    /// Events the bridge itself makes from a node's calls; a node's plain `event` may not use these
    /// names (they would start agent runs past the `agent` rate limit).
    public static let reserved: Set<String> = ["voice.transcript", "agent.request", "push.apns.register"]

    /// What a node's own `event` needs before it reaches an OpenClaw gateway, by name: the catalogue
    /// is deny-by-default, as commands are (issue 36 §5). Upstream acts on several names
    /// (`server-node-events.ts`, `handleNodeEvent`): `exec.*` and `notifications.changed` queue a
    /// system event and wake the agent's heartbeat, under a `sessionKey` the node may name;
    /// `chat.subscribe` attaches the node to any session. Names not listed here are refused.
    public struct Catalogued: Equatable, Sendable {
        public enum Gate: Equatable, Sendable {
            /// Anyone paired (presence reports, which upstream only records).
            case open
            /// Only a node that may run this command (`exec.*` report on `system.run`).
            case command(String)
            /// Only a node granted this name itself (`lanbridge nodes allow NODE notifications.changed`).
            case grant(String)
        }
        public let gate: Gate
        /// It queues a system event and wakes the agent: counted in the node's `agent` rate.
        public let wakesAgent: Bool
        /// Its `sessionKey` is removed, so upstream files it under the node's own session
        /// (`node-<id>` for `exec.*`) or the main one, never under a session the node picks.
        public let ownSessionOnly: Bool
    }

    public static let catalogue: [String: Catalogued] = [
        "exec.started": Catalogued(gate: .command("system.run"), wakesAgent: true, ownSessionOnly: true),
        "exec.finished": Catalogued(gate: .command("system.run"), wakesAgent: true, ownSessionOnly: true),
        "exec.denied": Catalogued(gate: .command("system.run"), wakesAgent: true, ownSessionOnly: true),
        "notifications.changed": Catalogued(gate: .grant("notifications.changed"), wakesAgent: true, ownSessionOnly: true),
        "node.presence.alive": Catalogued(gate: .open, wakesAgent: false, ownSessionOnly: true),
        "node.presence.activity": Catalogued(gate: .open, wakesAgent: false, ownSessionOnly: true),
    ]

    /// The payload without `sessionKey` (an object's other fields untouched).
    public static func withoutSessionKey(_ payload: JSONValue) -> JSONValue {
        guard case var .object(fields) = payload, fields["sessionKey"] != nil else { return payload }
        fields["sessionKey"] = nil
        return .object(fields)
    }

    /// `agent.request`'s payload fields (upstream's `AgentDeepLink`).
    static let agentRequestFields = [
        "message", "sessionKey", "thinking", "deliver", "attachments", "receipt", "receiptText",
        "to", "channel", "timeoutSeconds",
    ]

    /// A node's `agent` call (PROTOCOL.md §12.5). With `"source": "voice"` it is a voice transcript:
    /// `voice.transcript {text, sessionKey?, eventId}` (upstream drops repeats of one eventId within
    /// 1.5 s, so the idempotency key makes a retry harmless). Otherwise `agent.request` with the
    /// fields upstream reads.
    public static func agent(_ params: [String: JSONValue], idempotencyKey: String) -> (event: String, payload: JSONValue) {
        if params["source"] == "voice" {
            var payload: [String: JSONValue] = ["text": params["message"] ?? "", "eventId": .string(idempotencyKey)]
            if let session = params["sessionKey"] { payload["sessionKey"] = session }
            return ("voice.transcript", .object(payload))
        }
        return ("agent.request", .object(params.filter { agentRequestFields.contains($0.key) }))
    }

    /// A node's `system-event` call: its params, as a `node.event` named `system-event` (upstream
    /// accepts events it has no handler for).
    public static func systemEvent(_ params: [String: JSONValue]) -> (event: String, payload: JSONValue) {
        ("system-event", .object(params))
    }

    /// A node's APNs registration (PROTOCOL.md §9.6), as upstream's direct transport reads it
    /// (`server-node-events.ts`, case "push.apns.register": `token`, `topic`, `environment`), so
    /// OpenClaw's own APNs wake reaches a bridged iPhone. Nil for other providers: OpenClaw has none.
    public static func pushRegistration(_ registration: PushRegistration) -> (event: String, payload: JSONValue)? {
        guard registration.provider == PushRegistration.apns else { return nil }
        var payload: [String: JSONValue] = ["transport": "direct", "token": .string(registration.token)]
        if let topic = registration.topic { payload["topic"] = .string(topic) }
        if let environment = registration.environment { payload["environment"] = .string(environment) }
        return ("push.apns.register", .object(payload))
    }
}
