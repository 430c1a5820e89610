/// The commands an OpenClaw gateway lets its agent invoke on one node, as far as lanbridge can
/// tell (openclaw-gateway-protocol.md §3.2). On loopback the gateway approves a device's first
/// command surface with the device; a later surface that adds commands waits for its operator
/// (`openclaw nodes approve <requestId>`), and meanwhile the gateway keeps to the approved ones.
/// The gateway tells a node neither that request nor its approval, and applies an approval only
/// at the node's next connect: lanbridge learns of it when the gateway first invokes one of the
/// added commands.
public struct OpenClawSurface: Sendable, Equatable {
    /// What the gateway approved; nil before the device's first session.
    public private(set) var approved: Set<String>?
    /// What the current session offers.
    public private(set) var offered: Set<String> = []
    /// Offered, and waiting for the gateway's operator.
    public private(set) var awaiting: Set<String> = []

    public init(approved: [String]?) { self.approved = approved.map(Set.init) }

    /// A session came up offering `commands` (OpenClaw's names). True when `approved` changed and
    /// should be stored.
    public mutating func sessionUp(offering commands: [String]) -> Bool {
        offered = Set(commands)
        guard let approved else {
            (approved, awaiting) = (offered, [])
            return true
        }
        awaiting = offered.subtracting(approved)
        return false
    }

    /// The gateway invoked `command` (OpenClaw's name). One it was holding back proves its operator
    /// approved the request, and a request is approved whole. True when `approved` changed.
    public mutating func invoked(_ command: String) -> Bool {
        guard awaiting.contains(command) else { return false }
        approved = (approved ?? []).union(offered)
        awaiting = []
        return true
    }
}
