import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// The operator's changes that check before they write: one store update each.
extension PairingStore {
    /// `nodes allow|deny|ask` and the console: the pattern is checked against the known commands
    /// and the node's declared ones before anything is written, so a typo is refused, not kept.
    /// One acquisition of the lock (issue 61 §1: a read, then an update, waited twice the 10 s
    /// the CLI promises). Returns the node as it was too.
    @discardableResult
    public func addRule(
        _ pattern: String, _ kind: PairingState.RuleKind, node reference: String, catalog: CommandCatalog,
        unverifiedPage: Bool = false, actor: String = AuditLog.currentUser
    ) throws -> (before: PairedNode, after: PairedNode) {
        // A canvas origin is allowed or denied; asking is for commands only.
        let origin = kind != .ask && OriginPattern.isOrigin(pattern)
        if origin {
            do { _ = try OriginPattern(pattern) } catch { throw CanvasOriginRefused(origin: pattern, reason: error.reason) }
        }
        return try update(actor: actor) { state in
            let before = try state.node(matching: reference)
            if !origin { _ = try catalog.check(pattern, also: before.details.commands) }
            let after: PairedNode
            switch kind {
            case .allow: after = try state.allow(pattern, node: reference, unverifiedPage: unverifiedPage)
            case .deny: after = try state.deny(pattern, node: reference)
            case .ask: after = try state.ask(pattern, node: reference)
            }
            return (before, after)
        }
    }
}

extension PairingStore {
    /// `nodes approve` and the console's Approve: the node gets its platform's defaults (with the
    /// config's changes) and `grant`. A wrong code is written (counted on the request, so audited)
    /// before it is refused.
    /// A request that looks like a paired device under a new key needs `keyChange`: without it
    /// nothing changes. `.replace` gives the new key the old one's rules (and the grant's) and
    /// revokes the old key in the same write; `.add` pairs a second device.
    /// A request from an unverified browser page (`browser-unverified`) takes a `grant` beyond its
    /// defaults only with `unverifiedPage`, as `nodes allow` does.
    public func approve(
        _ requestId: String, code: String?, unverified: Bool, grant: ApprovalGrant, settings: BridgeSettings,
        keyChange: KeyChangeChoice? = nil, unverifiedPage: Bool = false, actor: String = AuditLog.currentUser, now: Date = Date()
    ) throws -> PairedNode {
        try update(actor: actor) { state -> Result<PairedNode, any Error> in
            let request = state.request(requestId)
            let details = request?.details
            let previous = request.flatMap { state.keyChange(for: $0) }
            if let request, let previous, keyChange == nil {
                return .failure(PairingError.keyChangeUndecided(request.requestId, name: previous.details.displayName, previous: previous.nodeId))
            }
            if let request, request.browser == .unverified, grant != ApprovalGrant(), !unverifiedPage {
                let asked = grant.allow + grant.ask + (grant.allowSensitive || grant.askSensitive ? ["every sensitive command it declares"] : [])
                return .failure(PairingError.unverifiedPage(request.nodeId, pattern: asked.joined(separator: ", ")))
            }
            let platform = request?.platformForDefaults ?? ""
            var access = grant.rules(defaults: settings.defaultRules(forPlatform: platform, declared: details?.commands ?? []), declared: details?.commands ?? [])
            if let previous, keyChange == .replace {
                access = previous.access
                for pattern in grant.rules(defaults: AccessRules(), declared: details?.commands ?? []).allow { access.grant(pattern) }
            }
            return Result {
                let node = try state.approve(requestId: requestId, code: code, unverified: unverified, access: access, now: now)
                if let previous, keyChange == .replace { _ = try state.revoke(nodeId: previous.nodeId.description) }
                return node
            }
        }.get()
    }
}
