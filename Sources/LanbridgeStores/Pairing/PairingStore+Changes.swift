import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// The operator's changes that check before they write: one store update each.
extension PairingStore {
    /// `nodes allow|deny` and the console: the pattern is checked against the known commands and
    /// the node's declared ones before anything is written, so a typo is refused, not kept.
    public func addRule(
        _ pattern: String, allowing: Bool, node reference: String, catalog: CommandCatalog,
        actor: String = AuditLog.currentUser
    ) throws -> PairedNode {
        if OriginPattern.isOrigin(pattern) {
            do { _ = try OriginPattern(pattern) } catch { throw CanvasOriginRefused(origin: pattern, reason: error.reason) }
        } else {
            _ = try catalog.check(pattern, also: try read().node(matching: reference).details.commands)
        }
        return try update(actor: actor) { allowing ? try $0.allow(pattern, node: reference) : try $0.deny(pattern, node: reference) }
    }
}

extension PairingStore {
    /// `nodes approve` and the console's Approve: the node gets its platform's defaults (with the
    /// config's changes) and `grant`. A wrong code is written (counted on the request, so audited)
    /// before it is refused.
    public func approve(
        _ requestId: String, code: String?, unverified: Bool, grant: ApprovalGrant, settings: BridgeSettings,
        actor: String = AuditLog.currentUser, now: Date = Date()
    ) throws -> PairedNode {
        try update(actor: actor) { state in
            let details = state.request(requestId)?.details
            let access = grant.rules(defaults: settings.defaultRules(forPlatform: details?.platform ?? ""), declared: details?.commands ?? [])
            return Result { try state.approve(requestId: requestId, code: code, unverified: unverified, access: access, now: now) }
        }.get()
    }
}
