import FoundationEssentials
import LanbridgeProtocol

extension AuditEntry {
    /// The audit entries that describe one store update, derived from the state before and after,
    /// so that no caller can change pairings without leaving a record.
    public static func changes(from before: PairingState, to after: PairingState, actor: String, now: Date) -> [AuditEntry] {
        var entries: [AuditEntry] = []
        func add(_ event: String, node: Fingerprint?, request: String? = nil, _ detail: String? = nil) {
            entries.append(AuditEntry(time: now, event: event, actor: actor, nodeId: node?.description, requestId: request, detail: detail))
        }
        let oldRequests = Set(before.pending.requests.map(\.requestId))
        let newRequests = Set(after.pending.requests.map(\.requestId))
        let oldNodes = Set(before.paired.nodes.map(\.publicKey)), newNodes = Set(after.paired.nodes.map(\.publicKey))
        let oldExpired = Set(before.pending.expired.map(\.requestId))

        for request in after.pending.requests where !oldRequests.contains(request.requestId) {
            add(
                "pairing.requested", node: request.nodeId, request: request.requestId,
                "\(request.details.displayName) (\(request.details.platform)) from \(request.sourceAddress ?? "?")")
            if let previous = after.keyChange(for: request) {
                add(
                    "pairing.key-changed", node: request.nodeId, request: request.requestId,
                    "looks like paired node \(previous.nodeId) (\(previous.details.displayName)) with a new key")
            }
        }
        let oldByID = Dictionary(before.pending.requests.map { ($0.requestId, $0) }) { $1 }
        for request in after.pending.requests {
            let old = oldByID[request.requestId]
            if request.challenges > old?.challenges ?? 0 {
                add(
                    "pairing.challenged", node: request.nodeId, request: request.requestId,
                    "code challenge \(request.challenges) of \(PairingState.Limits.challengesPerRequest) from \(request.sourceAddress ?? "?")")
            }
            if request.codeMismatches > old?.codeMismatches ?? 0 {
                add(
                    "pairing.code-mismatch", node: request.nodeId, request: request.requestId,
                    "the code given does not match the device's (\(request.codeMismatches) so far)")
            }
            if let lock = request.locked, old?.locked == nil {
                add("pairing.locked", node: request.nodeId, request: request.requestId, "\(lock.rawValue): \(lock.explanation)")
            }
        }
        for expired in after.pending.expired where !oldExpired.contains(expired.requestId) {
            add(
                expired.evicted == true ? "pairing.evicted" : "pairing.expired", node: expired.nodeId, request: expired.requestId,
                expired.evicted == true ? "pushed out by a newer request: the pending list was full" : nil)
        }
        for request in before.pending.requests
        where !newRequests.contains(request.requestId)
            && !newNodes.contains(request.publicKey) && !after.pending.expired.contains(where: { $0.requestId == request.requestId })
        {
            add("pairing.rejected", node: request.nodeId, request: request.requestId)
        }
        // A node paired with no request before it redeemed an invite, or (one of OpenClaw's apps)
        // a setup code: the invite it used is gone because it was used, not withdrawn.
        var redeemed = false
        for node in after.paired.nodes where !oldNodes.contains(node.publicKey) {
            let request = before.pending.requests.first { $0.publicKey == node.publicKey }
            let redemption =
                node.pairingMethod == .invite || (node.pairingMethod == .openClawApp && request == nil) || (node.pairingMethod == .browser && request == nil)
            redeemed = redeemed || redemption
            add(
                redemption ? "pairing.invite-redeemed" : "pairing.approved", node: node.nodeId,
                request: request?.requestId,
                (node.pairingMethod == .openClawApp && request == nil ? "an OpenClaw setup code; " : "")
                    + (node.pairingMethod == .browser ? "a browser at the browser door; " : "")
                    + (node.pairingMethod == .browserUnverified ? "a browser on an UNVERIFIED PAGE (self-signed certificate); " : "")
                    + (node.unverified == true ? "UNVERIFIED (no code compared); " : "")
                    + "allow: \(node.access.allow.joined(separator: ","))"
                    + (node.access.confirmed.isEmpty ? "" : "; sensitive, on purpose: \(node.access.confirmed.joined(separator: ","))")
                    + withheldSensitive(node))
        }
        for node in before.paired.nodes where !newNodes.contains(node.publicKey) {
            add("node.revoked", node: node.nodeId, node.details.displayName)
        }
        let oldAccess = Dictionary(before.paired.nodes.map { ($0.publicKey, $0.access) }) { $1 }
        for node in after.paired.nodes {
            if let access = oldAccess[node.publicKey], access != node.access {
                add(
                    "node.access-changed", node: node.nodeId,
                    "allow: \(node.access.allow.joined(separator: ","))" + (node.access.deny.isEmpty ? "" : "; deny: \(node.access.deny.joined(separator: ","))")
                        + (node.access.confirmed == access.confirmed ? "" : "; sensitive, on purpose: \(node.access.confirmed.joined(separator: ","))"))
            }
        }
        let oldBlocked = Set(before.paired.blocked.map(\.publicKey)), newBlocked = Set(after.paired.blocked.map(\.publicKey))
        for blocked in after.paired.blocked where !oldBlocked.contains(blocked.publicKey) {
            add("node.blocked", node: blocked.nodeId, blocked.displayName)
        }
        for blocked in before.paired.blocked where !newBlocked.contains(blocked.publicKey) {
            add("node.unblocked", node: blocked.nodeId, blocked.displayName)
        }
        let oldPush = Dictionary(before.paired.nodes.map { ($0.publicKey, $0.push) }) { $1 }
        for node in after.paired.nodes {
            if let push = node.push, let old = oldPush[node.publicKey], old != push {
                add(
                    "node.push-registered", node: node.nodeId,
                    "provider \(push.provider), token \(push.tokenHash)"
                        + (push.environment.map { ", \($0)" } ?? "") + (push.topic.map { ", topic \($0)" } ?? ""))
            }
        }
        let oldNames = Dictionary(before.paired.nodes.map { ($0.publicKey, $0.details.displayName) }) { $1 }
        for node in after.paired.nodes {
            if let name = oldNames[node.publicKey], name != node.details.displayName {
                add("node.renamed", node: node.nodeId, "\(name) -> \(node.details.displayName)")
            }
        }
        let oldInvites = Set(before.invites.invites.map(\.id)), newInvites = Set(after.invites.invites.map(\.id))
        for invite in after.invites.invites where !oldInvites.contains(invite.id) {
            add("invite.created", node: nil, "id \(invite.id.prefix(8)), expires \(ISO8601Text.string(invite.expiresAt))" + (invite.name.map { ", name \($0)" } ?? ""))
        }
        for invite in before.invites.invites where !newInvites.contains(invite.id) && invite.redeemedBy == nil {
            if invite.expiresAt <= now {
                add("invite.expired", node: nil, "id \(invite.id.prefix(8))")
            } else if !redeemed {
                add("invite.revoked", node: nil, "id \(invite.id.prefix(8))")
            }
        }
        return entries
    }
}

/// The sensitive commands a new node declared and did not get: an approval records what it withheld too.
private func withheldSensitive(_ node: PairedNode) -> String {
    let withheld = ApprovalGrant.withheld(node.access, declared: node.details.commands).filter(\.sensitive).map(\.command)
    return withheld.isEmpty ? "" : "; withheld (sensitive): \(withheld.joined(separator: ","))"
}
