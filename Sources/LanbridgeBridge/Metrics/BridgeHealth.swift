/// Whether the bridge is doing its job, as `/healthz` reports it: listening, the pairing store
/// readable, and the gateway link up when one is configured.
public enum BridgeHealth {
    public struct Snapshot: Sendable, Equatable {
        public var listening: Bool
        public var storeReadable: Bool
        /// Why the state directory takes no writes, and since when (nil while it does).
        public var stateProblem: String?
        public var gatewayConfigured: Bool
        public var gatewayUp: Bool
        /// As runtime.json says it: "connected to …", "connecting to …", "down: WHY; next try at …", "off".
        public var gatewayStatus: String
        public var paired: Int
        public var pending: Int
        public var connected: Int
        public var foreground: Int
    }

    /// Empty when healthy; otherwise one reason per failing check.
    public static func problems(_ snapshot: Snapshot) -> [String] {
        var problems: [String] = []
        if !snapshot.listening { problems.append("not listening") }
        if !snapshot.storeReadable { problems.append("the pairing store cannot be read") }
        if let state = snapshot.stateProblem { problems.append("state \(state): paired nodes keep working, nothing can be written") }
        if snapshot.gatewayConfigured, !snapshot.gatewayUp {
            problems.append("gateway link \(snapshot.gatewayStatus.hasPrefix("down: ") ? snapshot.gatewayStatus : "down (\(snapshot.gatewayStatus))")")
        }
        return problems
    }
}
