import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

/// A one-time invite as the bridge keeps it, in invites.json. Only hashes of the secret are stored:
/// the ID and the Noise PSK (PROTOCOL.md §4); redeeming also requires the secret itself.
public struct InviteRecord: Codable, Equatable, Sendable {
    public var id: String
    public var psk: String
    /// The display name to pair the node under, if the operator gave one.
    public var name: String?
    /// Written before 0.8.0: the node's exact allow rules (nil: the platform defaults).
    public var allow: [String]?
    /// From 0.8.0: what the node gets beyond its platform's everyday defaults.
    public var grant: ApprovalGrant?
    public var createdAt: Date
    public var expiresAt: Date
    /// An OpenClaw setup code's bootstrap token (`invite --openclaw`): `id` is the token's
    /// SHA-256 and `psk` is empty; only OpenClaw's apps at their front door can redeem it.
    public var openClaw: Bool?
    /// The boot it was made in, and the boot clock then (`Lifetimes`); absent in files written before these were kept.
    public var bootId: String?
    public var bootCreatedNs: Int64?
    /// The key it paired, once redeemed (issue 61 §3). Kept until it expires, so a device whose
    /// redemption was committed but never confirmed to it (the daemon died in between) gets in
    /// when it comes back with the same key and invite; any other key is refused.
    public var redeemedBy: PublicKey?

    /// Still offered: not expired at `now`, and not yet used.
    public func isOpen(at now: Date) -> Bool { expiresAt > now && redeemedBy == nil }
}

/// invites.json
public struct InvitesFile: Codable, Equatable, Sendable {
    public static let currentVersion = StateFormat.current.version(.invites)
    public var version = currentVersion
    public var invites: [InviteRecord] = []
    public init() {}
}

extension PairingState {
    /// Files a new invite and returns its secret (shown once, never stored).
    public mutating func createInvite(name: String?, grant: ApprovalGrant = ApprovalGrant(), ttl: TimeInterval, now: Date) -> SecureBytes {
        let secret = SecureBytes.random(count: SecureSession.Invite.secretLength)
        let psk = SecureSession.Invite.psk(forSecret: secret)
        invites.invites.append(
            InviteRecord(
                id: Hex.encode(SecureSession.Invite.id(forSecret: secret)), psk: psk.withUnsafeBytes { Hex.encode($0) },
                name: name, grant: grant, createdAt: now, expiresAt: now.addingTimeInterval(ttl)))
        return secret
    }

    /// Consumes the invite and pairs the node, if `secret` is the invite's secret. Single use.
    /// `defaultAccess` applies when the invite names no rules (the config file's platform defaults).
    /// `browser`: the browser door it came through, which the pairing method records.
    public mutating func redeemInvite(
        id: [UInt8], secret: SecureBytes, key: PublicKey, details: NodeDetails, browser: BrowserTier? = nil,
        defaultAccess: AccessRules? = nil, now: Date
    ) throws -> PairedNode {
        let hex = Hex.encode(id)
        guard let index = invites.invites.firstIndex(where: { $0.id == hex && $0.openClaw != true }), invites.invites[index].expiresAt > now,
            SecureSession.Invite.id(forSecret: secret) == id,
            SecureMemory.constantTimeEqual(
                SecureSession.Invite.psk(forSecret: secret),
                (try? Hex.decode(invites.invites[index].psk)) ?? [])
        else { throw PairingError.invalidInvite }
        return try pair(
            usingInviteAt: index, key: key, details: details, method: browser?.pairingMethod ?? .invite,
            defaultAccess: defaultAccess ?? (browser != nil ? .defaults(forPlatform: "web") : nil), now: now)
    }

    /// Uses up the invite at `index` and pairs `key` under it (its name and grant), unless the key
    /// is blocked; a key already paired keeps its record. One path for both kinds of invite.
    ///
    /// A used invite is kept, marked with the key it paired, until it expires: the same key
    /// coming back with it is answered as the paired node it is (the daemon may have died after
    /// committing the pairing and before telling the device: issue 61 §3), and any other key,
    /// or that key once revoked, is refused.
    mutating func pair(
        usingInviteAt index: Int, key: PublicKey, details: NodeDetails, method: PairingMethod, claim: OpenClawAppClaim? = nil,
        defaultAccess: AccessRules?, now: Date
    ) throws -> PairedNode {
        if isBlocked(key) { throw PairingError.blocked(key.fingerprint) }
        if let redeemer = invites.invites[index].redeemedBy {
            guard redeemer == key, let existing = node(withKey: key) else { throw PairingError.invalidInvite }
            return existing
        }
        invites.invites[index].redeemedBy = key
        let invite = invites.invites[index]
        if let existing = node(withKey: key) { return existing }
        var details = details
        if let name = invite.name { details.displayName = name }
        pending.requests.removeAll { $0.publicKey == key }
        let access =
            if let exact = invite.allow { ApprovalGrant(allow: exact).rules(defaults: AccessRules(), declared: details.commands) } else {
                (invite.grant ?? ApprovalGrant()).rules(defaults: defaultAccess ?? .defaults(forPlatform: details.platform), declared: details.commands)
            }
        var node = PairedNode(publicKey: key, details: details, pairingMethod: method, pairedAt: now, firstSeen: now, access: access)
        node.openClawApp = claim
        paired.nodes.append(node)
        return node
    }
}

extension PairingState {
    /// `invite --openclaw`: a single-use bootstrap token for OpenClaw's setup code (10 minutes by
    /// default), stored as its SHA-256 only. Returns the token (shown once).
    public mutating func createOpenClawBootstrap(name: String?, grant: ApprovalGrant = ApprovalGrant(), ttl: TimeInterval, now: Date) -> String {
        let token = Base64URL.encode(SecureRandom.bytes(32))
        invites.invites.append(
            InviteRecord(
                id: Self.bootstrapID(token), psk: "", name: name, grant: grant, createdAt: now,
                expiresAt: now.addingTimeInterval(ttl), openClaw: true))
        return token
    }

    /// One of OpenClaw's apps presented a bootstrap token: if it is a live one, it is used up and
    /// the app is paired at once (no request, no approval: the setup code was the operator's act).
    public mutating func redeemOpenClawBootstrap(
        _ token: String, claim: OpenClawAppClaim, key: PublicKey, details: NodeDetails,
        defaultAccess: AccessRules? = nil, now: Date
    ) throws -> PairedNode {
        let id = Array(Self.bootstrapID(token).utf8)
        guard let index = invites.invites.firstIndex(where: { $0.openClaw == true && SecureMemory.constantTimeEqual(Array($0.id.utf8), id) }),
            invites.invites[index].expiresAt > now
        else { throw PairingError.invalidInvite }
        return try pair(usingInviteAt: index, key: key, details: details, method: .openClawApp, claim: claim, defaultAccess: defaultAccess, now: now)
    }

    static func bootstrapID(_ token: String) -> String { Hex.encode(SHA256.hash(Array("lanbridge openclaw-bootstrap v1".utf8) + Array(token.utf8))) }
}
