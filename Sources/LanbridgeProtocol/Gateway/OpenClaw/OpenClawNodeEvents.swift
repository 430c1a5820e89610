/// What a lanbridge node says to the agent, as the `node.event`s an OpenClaw gateway acts on
/// (openclaw-gateway-protocol.md §4.5; OpenClaw's `src/gateway/server-node-events.ts`,
/// `handleNodeEvent`). Only the fields upstream reads are passed on.
public enum OpenClawNodeEvents {
    /// Events the bridge itself makes from a node's calls; a node's plain `event` may not use these
    /// names (they would start agent runs past the `agent` rate limit).
    public static let reserved: Set<String> = ["voice.transcript", "agent.request", "push.apns.register"]

    /// `agent.request`'s payload fields (upstream's `AgentDeepLink`).
    static let agentRequestFields = ["message", "sessionKey", "thinking", "deliver", "attachments", "receipt", "receiptText",
                                     "to", "channel", "timeoutSeconds"]

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
