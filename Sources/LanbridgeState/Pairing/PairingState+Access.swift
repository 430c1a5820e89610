import FoundationEssentials
import LanbridgeProtocol

extension PairingState {
    /// `nodes allow`: the pattern is allowed, and an identical deny rule goes. A node paired
    /// through an unverified page gets more than the web's display-only defaults only when the
    /// operator says `unverifiedPage`.
    public mutating func allow(_ pattern: String, node reference: String, unverifiedPage: Bool = false) throws -> PairedNode {
        let node = try node(matching: reference)
        if node.pairingMethod == .browserUnverified, !unverifiedPage, !AccessRules.defaults(forPlatform: "web").allow.contains(pattern) {
            throw PairingError.unverifiedPage(node.nodeId, pattern: pattern)
        }
        return try editAccess(of: reference) { $0.grant(pattern) }
    }

    /// `nodes allow --confirm-defaults`: the operator keeps what the defaults before 0.8.0 granted.
    public mutating func confirmDefaults(node reference: String) throws -> PairedNode {
        let old = try node(matching: reference).grantedByOldDefault
        return try editAccess(of: reference) { rules in rules.confirmed += old.filter { !rules.confirmed.contains($0) } }
    }

    /// `nodes deny`: an identical allow rule goes, and a deny rule is recorded, which wins over any
    /// wildcard that would still allow it (a glob cannot be subtracted from).
    public mutating func deny(_ pattern: String, node reference: String) throws -> PairedNode {
        try editAccess(of: reference) { rules in
            rules.allow.removeAll { $0 == pattern }
            rules.confirmed.removeAll { $0 == pattern }
            if !rules.deny.contains(pattern) { rules.deny.append(pattern) }
        }
    }

    /// `nodes ask`: each invoke the pattern matches waits for the operator's answer (an identical
    /// deny rule goes; an allow rule stays, and ask wins over it).
    public mutating func ask(_ pattern: String, node reference: String) throws -> PairedNode {
        try editAccess(of: reference) { rules in
            rules.deny.removeAll { $0 == pattern }
            if !rules.ask.contains(pattern) { rules.ask.append(pattern) }
        }
    }

    /// `invokes approve --always`: the ask rule that matched becomes an allow rule.
    public mutating func askToAllow(_ pattern: String, node reference: String) throws -> PairedNode {
        guard try node(matching: reference).access.ask.contains(pattern) else {
            throw PairingError.noSuchRule(pattern, "ask", try node(matching: reference).nodeId)
        }
        return try editAccess(of: reference) { rules in
            rules.ask.removeAll { $0 == pattern }
            rules.grant(pattern)
        }
    }

    /// Which list a rule is in (`nodes allow|deny|ask --remove`).
    public enum RuleKind: String, Sendable { case allow, deny, ask }

    /// `nodes allow|deny|ask --remove`: takes one rule out, as written; no such rule is an error.
    public mutating func removeRule(_ pattern: String, kind: RuleKind, node reference: String) throws -> PairedNode {
        let current = try node(matching: reference)
        let list =
            switch kind {
            case .allow: current.access.allow
            case .deny: current.access.deny
            case .ask: current.access.ask
            }
        guard list.contains(pattern) else { throw PairingError.noSuchRule(pattern, kind.rawValue, current.nodeId) }
        return try editAccess(of: reference) { rules in
            switch kind {
            case .deny: rules.deny.removeAll { $0 == pattern }
            case .ask: rules.ask.removeAll { $0 == pattern }
            case .allow:
                rules.allow.removeAll { $0 == pattern }
                rules.confirmed.removeAll { $0 == pattern }
            }
        }
    }

    private mutating func editAccess(of reference: String, _ edit: (inout AccessRules) -> Void) throws -> PairedNode {
        let id = try node(matching: reference).nodeId
        guard let index = paired.nodes.firstIndex(where: { $0.nodeId == id }) else { throw PairingError.unknownNode(reference) }
        edit(&paired.nodes[index].access)
        return paired.nodes[index]
    }
}

extension PairingState {
    /// `nodes rename`: the display name the operator chose (cleaned as a device's would be).
    public mutating func rename(_ reference: String, to name: String) throws -> PairedNode {
        let clean = NodeDetails(displayName: name, platform: "").sanitized().displayName
        let id = try node(matching: reference).nodeId
        guard let index = paired.nodes.firstIndex(where: { $0.nodeId == id }) else { throw PairingError.unknownNode(reference) }
        paired.nodes[index].details.displayName = clean
        return paired.nodes[index]
    }

    /// `nodes unblock`: the blocked key (by ID or display name) may ask to pair again.
    public mutating func unblock(_ reference: String) throws -> BlockedKey {
        let id = Fingerprint(reference)
        let matches = paired.blocked.filter { $0.nodeId == id || $0.displayName == reference }
        guard matches.count == 1, let key = matches.first else {
            throw matches.isEmpty ? PairingError.unknownNode(reference) : PairingError.unknownNode("\(reference) (names \(matches.count) blocked keys; use the node ID)")
        }
        paired.blocked.removeAll { $0.publicKey == key.publicKey }
        return key
    }

    /// `invite revoke`: removes a live invite by its ID or a unique prefix of it (8 characters are shown).
    public mutating func revokeInvite(_ prefix: String) throws -> InviteRecord {
        let matches = invites.invites.filter { $0.id.hasPrefix(prefix.lowercased()) }
        guard !prefix.isEmpty, matches.count == 1, let invite = matches.first else { throw PairingError.invalidInvite }
        invites.invites.removeAll { $0.id == invite.id }
        return invite
    }

    /// `nodes revoke` by ID or unique display name; with `block`, its key may not ask to pair again
    /// (undone by `unblock`).
    public mutating func revoke(matching reference: String, block: Bool = false, now: Date = Date()) throws -> PairedNode {
        let node = try revoke(nodeId: node(matching: reference).nodeId.description)
        if block, !isBlocked(node.publicKey) {
            paired.blocked.append(BlockedKey(nodeId: node.nodeId, publicKey: node.publicKey, displayName: node.details.displayName, blockedAt: now))
        }
        return node
    }
}

/// `nodes allow|deny NODE ORIGIN` with an origin that does not read as one.
public struct CanvasOriginRefused: Error, CustomStringConvertible {
    public let origin: String
    public let reason: String
    public var description: String { "bad origin \"\(SafeText.escape(origin))\": \(reason) (for example https://example.com or https://*.example.com:8443)" }
    public init(origin: String, reason: String) { (self.origin, self.reason) = (origin, reason) }
}
