import Foundation
import LanbridgeProtocol

/// What a node says about itself when it asks to pair. Claims, never trust: the bridge decides
/// what a node may do from the access rules, not from these lists alone.
public struct NodeDetails: Codable, Equatable, Sendable {
    public var displayName: String
    public var platform: String
    public var osVersion: String?
    public var appVersion: String?
    public var deviceModel: String?
    public var caps: [String]
    public var commands: [String]
    public var flags: CapabilityFlags

    public init(displayName: String, platform: String, osVersion: String? = nil, appVersion: String? = nil,
                deviceModel: String? = nil, caps: [String] = [], commands: [String] = [], flags: CapabilityFlags = .init()) {
        self.displayName = displayName
        self.platform = platform
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.deviceModel = deviceModel
        self.caps = caps
        self.commands = commands
        self.flags = flags
    }
}

public struct CapabilityFlags: Codable, Equatable, Sendable {
    /// Commands that draw or capture need the app in the foreground.
    public var requiresForeground: Bool
    public var supportsInputInjection: Bool

    public init(requiresForeground: Bool = false, supportsInputInjection: Bool = false) {
        self.requiresForeground = requiresForeground
        self.supportsInputInjection = supportsInputInjection
    }
}

/// Per-node allowlist of command patterns (`canvas.*`). Empty denies everything.
public struct AccessRules: Codable, Equatable, Sendable {
    public var allow: [String]

    public init(allow: [String] = []) {
        self.allow = allow
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

    enum CodingKeys: String, CodingKey {
        case nodeId, publicKey, pairingMethod, pairedAt, firstSeen, lastSeen, access
    }

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

    // The node's details sit flat beside the pairing fields in JSON.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        nodeId = try c.decode(Fingerprint.self, forKey: .nodeId)
        publicKey = try c.decode(PublicKey.self, forKey: .publicKey)
        details = try NodeDetails(from: decoder)
        pairingMethod = try c.decode(PairingMethod.self, forKey: .pairingMethod)
        pairedAt = try c.decode(Date.self, forKey: .pairedAt)
        firstSeen = try c.decode(Date.self, forKey: .firstSeen)
        lastSeen = try c.decode(Date.self, forKey: .lastSeen)
        access = try c.decode(AccessRules.self, forKey: .access)
    }

    public func encode(to encoder: any Encoder) throws {
        try details.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(nodeId, forKey: .nodeId)
        try c.encode(publicKey, forKey: .publicKey)
        try c.encode(pairingMethod, forKey: .pairingMethod)
        try c.encode(pairedAt, forKey: .pairedAt)
        try c.encode(firstSeen, forKey: .firstSeen)
        try c.encode(lastSeen, forKey: .lastSeen)
        try c.encode(access, forKey: .access)
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

    enum CodingKeys: String, CodingKey {
        case requestId, nodeId, publicKey, sourceAddress, code, createdAt, expiresAt
    }

    public init(requestId: String, publicKey: PublicKey, details: NodeDetails, sourceAddress: String?, createdAt: Date, expiresAt: Date) {
        self.requestId = requestId
        nodeId = publicKey.fingerprint
        self.publicKey = publicKey
        self.details = details
        self.sourceAddress = sourceAddress
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        requestId = try c.decode(String.self, forKey: .requestId)
        nodeId = try c.decode(Fingerprint.self, forKey: .nodeId)
        publicKey = try c.decode(PublicKey.self, forKey: .publicKey)
        details = try NodeDetails(from: decoder)
        sourceAddress = try c.decodeIfPresent(String.self, forKey: .sourceAddress)
        code = try c.decodeIfPresent(String.self, forKey: .code)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        expiresAt = try c.decode(Date.self, forKey: .expiresAt)
    }

    public func encode(to encoder: any Encoder) throws {
        try details.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(requestId, forKey: .requestId)
        try c.encode(nodeId, forKey: .nodeId)
        try c.encode(publicKey, forKey: .publicKey)
        try c.encodeIfPresent(sourceAddress, forKey: .sourceAddress)
        try c.encodeIfPresent(code, forKey: .code)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(expiresAt, forKey: .expiresAt)
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
