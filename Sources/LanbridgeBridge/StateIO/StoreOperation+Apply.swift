import FoundationEssentials
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores

// The core decides a store change (`StoreOperation`); this carries it out, on StateIO's thread.
extension StoreOperation {
    /// `apply`, with a write the file system refused told as such (`StoreOperation.Unwritable`):
    /// the core then keeps serving and looks at the state directory again later.
    func carryOut(on store: PairingStore) throws -> Outcome {
        do { return try apply(to: store) } catch let error as StoreError {
            guard let reason = error.unwritableReason else { throw error }
            throw StoreOperation.Unwritable(reason: reason, description: "\(error)")
        }
    }

    /// Carries the change out on the store (on the driver's I/O thread).
    func apply(to store: PairingStore) throws -> Outcome {
        switch change {
        case let .challenge(key, details, source, browser, now, timing):
            return .challenged(
                try store.update(actor: "bridge") { try $0.challenge(key: key, details: details, source: source, browser: browser, now: now, timing: timing) })
        case let .commitmentFailed(requestId):
            try store.update(actor: "bridge") { $0.commitmentFailed(requestId: requestId) }
            return .done
        case let .setCode(code, requestId, now, timing):
            return .codeSet(
                expiresAt: try store.update(actor: "bridge") { state -> Date? in
                    state.setCode(code, requestId: requestId)
                    try state.refresh(requestId: requestId, now: now, timing: timing)
                    return state.request(requestId)?.expiresAt
                })
        case let .redeemInvite(id, secret, key, details, browser, access, now):
            return .redeemed(
                try store.update(actor: "bridge") {
                    try $0.redeemInvite(id: id, secret: secret, key: key, details: details, browser: browser, defaultAccess: access, now: now)
                })
        case let .maintain(waiting, now, timing):
            try store.update(actor: "bridge") { state in
                for id in waiting { try? state.refresh(requestId: id, now: now, timing: timing) }
                _ = state.expire(now: now)
            }
            return .done
        case let .recordSeen(nodes, now):
            try store.update(actor: "bridge") { $0.recordSeen(nodes, now: now) }
            return .done
        case let .appBootstrap(token, key, claim, details, access, now):
            return .redeemed(
                try store.update(actor: "bridge") {
                    try $0.redeemOpenClawBootstrap(token, claim: claim, key: key, details: details, defaultAccess: access, now: now)
                })
        case let .appRequest(key, claim, details, source, now, timing):
            // Approved a moment ago (the core's read was older): under the lock, it is paired.
            return try store.update(actor: "bridge") { state -> Outcome in
                if let node = state.node(withKey: key), node.openClawApp?.deviceId == claim.deviceId { return .redeemed(node) }
                return .challenged(try state.requestAppPairing(claim, key: key, details: details, source: source, now: now, timing: timing))
            }
        case let .registerPush(node, registration, _, now):
            // Under the store's lock, once the node is known paired: a revocation cannot slip in
            // between, so no token outlives its pairing.
            try store.update(actor: "node \(node)") { state in
                // The same registration again changes nothing: no write, no audit line (issue 36).
                guard try state.setPush(PushSummary(registration, registeredAt: now), node: node) else { return }
                try PushTokens(directory: store.directory).set(registration, for: node, now: now)
            }
            return .done
        }
    }
}
