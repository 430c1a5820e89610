import Foundation
import LanbridgeProtocol

/// Per-node access rules: command patterns allowed (`canvas.*`), and patterns denied, which win.
/// Empty allows nothing.
public struct AccessRules: Codable, Equatable, Sendable {
    public var allow: [String]
    /// Carve-outs from `allow` (`nodes deny` on a command a wildcard allows).
    public var deny: [String]

    public init(allow: [String] = [], deny: [String] = []) {
        (self.allow, self.deny) = (allow, deny)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allow = try c.decode([String].self, forKey: .allow)
        deny = try c.decodeIfPresent([String].self, forKey: .deny) ?? []  // absent before version 0.5
    }
}

public enum PairingMethod: String, Codable, Sendable {
    case code, invite
}

/// A paired node, as kept in paired.json. Only public material: a leaked copy lets no one connect,
/// because connecting requires the node's private key in the Noise handshake.
public struct PairedNode: Codable, Equatable, Sendable {
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var details: NodeDetails
    public var pairingMethod: PairingMethod
    public var pairedAt: Date
    public var firstSeen: Date
    public var lastSeen: Date
    public var access: AccessRules

    public init(publicKey: PublicKey, details: NodeDetails, pairingMethod: PairingMethod, pairedAt: Date, firstSeen: Date, access: AccessRules) {
        nodeId = publicKey.fingerprint
        self.publicKey = publicKey
        self.details = details
        self.pairingMethod = pairingMethod
        self.pairedAt = pairedAt
        self.firstSeen = firstSeen
        lastSeen = pairedAt
        self.access = access
    }
}

/// A key the operator rejected with `--block`: its pairing requests are ignored.
public struct BlockedKey: Codable, Equatable, Sendable {
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var displayName: String
    public var blockedAt: Date
}

/// A pairing request waiting for the operator, as kept in pending.json.
public struct PendingRequest: Codable, Equatable, Sendable {
    public var requestId: String
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var details: NodeDetails
    public var sourceAddress: String?
    /// The verification code, once the node has revealed its nonce.
    public var code: String?
    public var createdAt: Date
    public var expiresAt: Date

    public init(requestId: String, publicKey: PublicKey, details: NodeDetails, sourceAddress: String?, createdAt: Date, expiresAt: Date) {
        self.requestId = requestId
        nodeId = publicKey.fingerprint
        self.publicKey = publicKey
        self.details = details
        self.sourceAddress = sourceAddress
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A request that timed out: kept for a while so `approve` can say "expired" rather than "unknown".
public struct ExpiredRequest: Codable, Equatable, Sendable {
    public var requestId: String
    public var nodeId: Fingerprint
    public var displayName: String
    public var createdAt: Date
    public var expiredAt: Date
}

/// paired.json
public struct PairedFile: Codable, Equatable, Sendable {
    public static let currentVersion = 1
    public var version = currentVersion
    public var nodes: [PairedNode] = []
    public var blocked: [BlockedKey] = []
    public init() {}
}

/// pending.json
public struct PendingFile: Codable, Equatable, Sendable {
    public static let currentVersion = 1
    public var version = currentVersion
    public var requests: [PendingRequest] = []
    public var expired: [ExpiredRequest] = []
    public init() {}
}
