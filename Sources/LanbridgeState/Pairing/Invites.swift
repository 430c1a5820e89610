import Foundation
import LanbridgeCrypto
import LanbridgeProtocol

/// A one-time invite as the bridge keeps it, in invites.json. Only hashes of the secret are stored:
/// the ID and the Noise PSK (PROTOCOL.md §4); redeeming also requires the secret itself.
public struct InviteRecord: Codable, Equatable, Sendable {
    public var id: String
    public var psk: String
    /// The display name to pair the node under, if the operator gave one.
    public var name: String?
    /// Access rules for the node; nil means the platform defaults.
    public var allow: [String]?
    public var createdAt: Date
    public var expiresAt: Date
}

/// invites.json
public struct InvitesFile: Codable, Equatable, Sendable {
    public static let currentVersion = 1
    public var version = currentVersion
    public var invites: [InviteRecord] = []
    public init() {}
}

extension PairingState {
    /// Files a new invite and returns its secret (shown once, never stored).
    public mutating func createInvite(name: String?, allow: [String]?, ttl: TimeInterval, now: Date) -> SecureBytes {
        let secret = SecureBytes.random(count: SecureSession.Invite.secretLength)
        let psk = SecureSession.Invite.psk(forSecret: secret)
        invites.invites.append(InviteRecord(
            id: Hex.encode(SecureSession.Invite.id(forSecret: secret)), psk: psk.withUnsafeBytes { Hex.encode($0) },
            name: name, allow: allow, createdAt: now, expiresAt: now.addingTimeInterval(ttl)))
        return secret
    }

    /// Consumes the invite and pairs the node, if `secret` is the invite's secret. Single use.
    /// `defaultAccess` applies when the invite names no rules (the config file's platform defaults).
    public mutating func redeemInvite(id: [UInt8], secret: SecureBytes, key: PublicKey, details: NodeDetails,
                                      defaultAccess: AccessRules? = nil, now: Date) throws -> PairedNode {
        let hex = Hex.encode(id)
        guard let index = invites.invites.firstIndex(where: { $0.id == hex }), invites.invites[index].expiresAt > now,
              SecureSession.Invite.id(forSecret: secret) == id,
              SecureMemory.constantTimeEqual(SecureSession.Invite.psk(forSecret: secret),
                                       (try? Hex.decode(invites.invites[index].psk)) ?? [])
        else { throw PairingError.invalidInvite }
        if isBlocked(key) { throw PairingError.blocked(key.fingerprint) }
        let invite = invites.invites.remove(at: index)
        if let existing = node(withKey: key) { return existing }
        var details = details
        if let name = invite.name { details.displayName = name }
        pending.requests.removeAll { $0.publicKey == key }
        let node = PairedNode(publicKey: key, details: details, pairingMethod: .invite, pairedAt: now, firstSeen: now,
                              access: invite.allow.map { AccessRules(allow: $0) } ?? defaultAccess ?? AccessRules.defaults(forPlatform: details.platform))
        paired.nodes.append(node)
        return node
    }
}

extension AccessRules {
    /// What a newly paired node may run, by the platform it reports. Deny by default: an unknown
    /// platform gets nothing until the operator allows it.
    public static func defaults(forPlatform platform: String) -> AccessRules {
        let ios = ["canvas.*", "camera.list", "camera.snap", "screen.record", "location.get"]
        return switch platform.lowercased() {
        case "ios": AccessRules(allow: ios)
        case "android": AccessRules(allow: ios + ["sms.send"])
        case "macos": AccessRules(allow: ["canvas.*", "camera.list", "camera.snap", "screen.record", "screen.snapshot", "system.info"])
        case "linux": AccessRules(allow: ["canvas.*", "screen.record", "screen.snapshot", "system.info"])
        default: AccessRules()
        }
    }
}
