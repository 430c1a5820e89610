import LanbridgeProtocol

/// What the bridge needs from its gateway link: a place to post events, in order, and a way to
/// call the gateway for a node. The link drops events while it is down; calls then fail with
/// `UNAVAILABLE`.
protocol GatewayUplink: Sendable {
    func post(_ frame: GatewayFrame)
    func call(method: String, params: JSONValue?) async -> Result<JSONValue?, ErrorMessage>
}
