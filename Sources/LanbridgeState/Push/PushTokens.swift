import FoundationEssentials
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol

/// Where to wake each paired node (`push-tokens.json`, mode 0600: a token lets anyone with the
/// provider's credentials reach the phone). Only the daemon reads and writes it; paired.json keeps
/// what is not secret (`PairedNode.push`). A registration is written here first and summarised in
/// paired.json second; `keepOnly` at start and on revocation removes what outlived its pairing.
public struct PushTokens: Sendable {
    public static let fileName = "push-tokens.json"

    public struct Record: Codable, Sendable, Equatable {
        public var registration: PushRegistration
        public var registeredAt: Date
    }

    private let file: NodeSecrets<Record>
    public var url: URL { file.url }
    public init(directory: StateDirectory) { file = NodeSecrets(directory.file(Self.fileName), table: "nodes") }

    public func set(_ registration: PushRegistration, for node: Fingerprint, now: Date) throws {
        try file.update { $0[node.description] = Record(registration: registration, registeredAt: now) }
    }

    public func record(for node: Fingerprint) throws -> Record? { try file.read()[node.description] }

    /// Forgets the tokens of nodes no longer paired; returns how many went.
    @discardableResult
    public func keepOnly(_ nodes: Set<Fingerprint>) throws -> Int { try file.keepOnly(nodes) }
}

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
