import FoundationEssentials
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// Where to wake each paired node (`push-tokens.json`, mode 0600: a token lets anyone with the
/// provider's credentials reach the phone). Only the daemon reads and writes it; paired.json keeps
/// what is not secret (`PairedNode.push`). A registration is written here first and summarised in
/// paired.json second; `keepOnly` at start and on revocation removes what outlived its pairing.
public struct PushTokens: Sendable {
    public static let fileName = StateFormat.File.pushTokens.rawValue

    public struct Record: Codable, Sendable, Equatable {
        public var registration: PushRegistration
        public var registeredAt: Date
    }

    private let file: NodeSecrets<Record>
    public var url: URL { file.url }
    public init(directory: StateDirectory) { file = NodeSecrets(.pushTokens, in: directory, table: "nodes") }

    public func set(_ registration: PushRegistration, for node: Fingerprint, now: Date) throws {
        try file.update { $0[node.description] = Record(registration: registration, registeredAt: now) }
    }

    public func record(for node: Fingerprint) throws -> Record? { try file.read()[node.description] }

    /// Forgets the tokens of nodes no longer paired; returns how many went.
    @discardableResult
    public func keepOnly(_ nodes: Set<Fingerprint>) throws -> Int { try file.keepOnly(nodes) }
}
