import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// A connection, as the core knows it: a number the driver gave it.
package typealias ConnectionID = Int

/// Who waits for an answer: a request on one generation of the gateway link, or an operator's
/// request on the control socket. An answer for a link generation that is gone is dropped, never
/// delivered to a later link that may reuse the request ID.
package enum AnswerTarget: Hashable, Sendable {
    case gateway(generation: Int, requestID: String)
    case control(Int)
    /// An invoke on a node's own socket at an OpenClaw gateway.
    case openClaw(node: Fingerprint, invokeID: String)
}

/// What the core asks its driver to do. The driver carries these out in order and reports back
/// through the core's event methods; the core itself does no I/O and reads no clock.
package enum BridgeAction: Sendable {
    /// Encrypt and send a message to a node.
    case send(ConnectionID, any SessionMessage)
    /// An invoke that ended (timed out) before it was written to the node: drop it if it still
    /// waits in the node's outbox (issue 61 §4).
    case withdraw(ConnectionID, invokeID: String)
    /// The node proved a paired key: lift the small pre-pairing limits on its channel (before the
    /// welcome that follows).
    case authorize(ConnectionID)
    case close(ConnectionID)
    /// A frame for the gateway link of this generation (events and the bridge's own calls).
    case toGateway(generation: Int, GatewayFrame)
    /// The answer to a request.
    case answer(AnswerTarget, InvokeAnswer)
    /// A change to the pairing store, carried out off the event loop; its outcome comes back
    /// through `storeUpdated`.
    case updateStore(StoreOperation)
    case audit([AuditEntry])
    /// Find out whether the state directory takes writes again (the answer is `.stateProbed`), and
    /// with `read`, read the store again once it does.
    case probeState(read: Bool)
    /// runtime.json has changed; the driver writes it soon (debounced, not synced), built then
    /// with `BridgeCore.runtimeFile()`: once per write, not once per event (O(nodes) each).
    case publishRuntime
    case replaceInvites(PairingState)
    case releaseSlot(AdmissionSlot)
    case slotWaiting(AdmissionSlot)
    /// Run the operator's wake hook for a node an invoke is held for (at most once per node per 30 s).
    case wake(WakeCall)
    /// Run the operator's notify hook: an invoke now waits for their answer.
    case notifyOperator(BridgeSettings.Notify, AskedInvokes.Prompt)
    /// Wake the core (`timerFired`) no later than this.
    case armTimer(Moment)
    /// With the OpenClaw gateway protocol: a paired node came, changed or went.
    case nodePresence(NodePresence)
    /// With the OpenClaw gateway protocol: a `node.event` on the node's socket; with a `tag`, the
    /// gateway's reply comes back through `openClawEventAnswered`.
    case openClawEvent(node: Fingerprint, event: String, payload: JSONValue, tag: String?)
    /// The node's canvas capability died (its session ended): close its relay connections.
    case canvasRevoked(Fingerprint)
    /// The answer to `.canvasUse`.
    case canvasUsed(reply: Int, CanvasUse)
    /// With the OpenClaw gateway protocol: ask the gateway for a fresh canvas capability for the
    /// node's socket (the node refreshed its own; issue 48 §5).
    case refreshUpstreamCanvas(Fingerprint)
    /// Lines to log, as the core recorded them (issue 39: no logger in the core).
    case log([CoreLog.Record])
    /// Counts for the metrics, as the core recorded them.
    case count([CoreMetric])
    /// What the console shows live has changed: an invoke started or stopped waiting for the
    /// operator (`asks`), or the activity feed grew (`activity`). At most one of each per event.
    case liveChanged(LiveTopic)
}

/// What changed for the console's live pages (`BridgeAction.liveChanged`).
package enum LiveTopic: Sendable, Equatable { case asks, activity }

/// A change to the pairing store the core needs made. Each is one `PairingStore.update`.
package struct StoreOperation: Sendable {
    package let id: Int
    package let change: Change

    /// The file system refused the change's write (read-only, full, an immutable file): the
    /// failure the core treats as a state directory that takes no writes. The store layer says
    /// which failures these are (`StoreError.unwritableReason`).
    package struct Unwritable: Error, CustomStringConvertible {
        package let reason: String
        package let description: String
        package init(reason: String, description: String) { (self.reason, self.description) = (reason, description) }
    }

    package enum Change: Sendable {
        /// A code challenge on this key's request (PairingState.challenge).
        case challenge(key: PublicKey, details: NodeDetails, source: String, browser: BrowserTier?, now: Date, timing: PairingState.Timing)
        case commitmentFailed(requestId: String)
        /// The code is known: record it and extend the request.
        case setCode(String, requestId: String, now: Date, timing: PairingState.Timing)
        case redeemInvite(id: [UInt8], secret: SecureBytes, key: PublicKey, details: NodeDetails, browser: BrowserTier?, defaultAccess: AccessRules, now: Date)
        /// Keep waiting requests alive, expire stale ones.
        case maintain(waiting: Set<String>, now: Date, timing: PairingState.Timing)
        case recordSeen(Set<Fingerprint>, now: Date)
        /// A node's push registration: the token into push-tokens.json, its summary into
        /// paired.json. `messageId` is the node's `push.register` to answer.
        case registerPush(node: Fingerprint, PushRegistration, messageId: String, now: Date)
        /// One of OpenClaw's apps with an unknown device: its pending request.
        case appRequest(key: PublicKey, OpenClawAppClaim, details: NodeDetails, source: String, now: Date, timing: PairingState.Timing)
        /// One of OpenClaw's apps with a setup code's bootstrap token: paired at once if it is live.
        case appBootstrap(token: String, key: PublicKey, OpenClawAppClaim, details: NodeDetails, defaultAccess: AccessRules, now: Date)
    }

    package enum Outcome: Sendable {
        case challenged(PendingRequest)
        case codeSet(expiresAt: Date?)
        case redeemed(PairedNode)
        case done
    }
}
