import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

/// What paired.json says of a node's push registration: enough to see it, nothing that wakes it.
public struct PushSummary: Codable, Sendable, Equatable {
    public var provider: String
    public var environment: String?
    public var topic: String?
    public var registeredAt: Date
    /// The first 8 bytes of the token's SHA-256, hex: tells two tokens apart, reveals neither.
    public var tokenHash: String

    public init(_ registration: PushRegistration, registeredAt: Date) {
        provider = registration.provider
        environment = registration.environment
        topic = registration.topic
        self.registeredAt = registeredAt
        tokenHash = Hex.encode(SHA256.hash(Array(registration.token.utf8)).prefix(8))
    }
}

extension PairingState {
    /// Records a node's push registration (its summary); a node no longer paired is an error.
    /// Records the node's push registration; false (and nothing changes) when it is the one
    /// already recorded, so a node that registers again and again writes no file and no audit line.
    @discardableResult
    public mutating func setPush(_ summary: PushSummary, node: Fingerprint) throws -> Bool {
        guard let index = paired.nodes.firstIndex(where: { $0.nodeId == node }) else { throw PairingError.unknownNode(node.description) }
        if var current = paired.nodes[index].push {
            current.registeredAt = summary.registeredAt
            if current == summary { return false }
        }
        paired.nodes[index].push = summary
        return true
    }
}
