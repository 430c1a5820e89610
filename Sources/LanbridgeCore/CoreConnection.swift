import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// A connection's place in the admission policy (`AdmissionPolicy.Slot` in LanbridgeBridge).
package typealias AdmissionSlot = Int

extension BridgeCore {
    /// Where a connection stands in pairing.
    package enum Phase: Equatable {
        /// Unpaired, XX: may only ask to pair.
        case unpaired
        /// Asked to pair; the store is recording the challenge.
        case requesting(commitment: [UInt8])
        /// Sent the challenge; waiting for the node to reveal the nonce it committed to.
        case challenged(requestId: String, commitment: [UInt8], bridgeNonce: [UInt8])
        /// Revealed; the store is recording the code.
        case revealing(requestId: String)
        /// The code is set; waiting for the operator.
        case waiting(requestId: String)
        /// Came in through an invite (XXpsk3): must redeem it with the secret.
        case invited(inviteID: [UInt8])
        /// Redeeming; the store is checking the secret.
        case redeeming
        /// One of OpenClaw's apps with an unknown device: the store is filing its request.
        case appRequesting
        case paired

        /// The pending request this connection is tied to, if it is that far.
        package var requestId: String? {
            switch self {
            case let .challenged(id, _, _), let .revealing(id), let .waiting(id): id
            default: nil
            }
        }
    }

    package struct Connection {
        package let id: ConnectionID
        package let key: PublicKey
        /// Kept, not derived from `key` on each use (a SHA-256 and base32 twice per invoke).
        package let nodeId: Fingerprint
        package let address: String
        /// `ip:port`, as every log line gives peers.
        package let peer: String
        /// The bridge's own address this connection arrived on (the canvas relay's URL uses it:
        /// the node reached the bridge there).
        package var local: String?
        package let handshakeHash: [UInt8]
        package var phase: Phase
        package var foreground = true
        /// Its channel holds more than `nodeQueueBytes` unwritten (it stopped reading).
        package var backlogged = false
        /// The foreground state last announced, and state changes since held back by the rate limit.
        package var announcedForeground: Bool?
        package var coalescedStates = 0
        /// Events dropped since the last summary (over the node's event limits).
        package var droppedEvents = 0
        /// Results of this connection's that answered nobody, since the last line about them.
        package var droppedResults = 0
        /// When the coalesced states, dropped events and dropped results were last logged: one
        /// line a minute at most, so a node cannot flood the log.
        package var summarised = Moment.distantPast
        /// Shown to people (runtime.json), so wall time.
        package let connectedAt: Date
        /// Its place in the admission limits while it has not proved a paired key.
        package var slot: AdmissionSlot?
        /// The name an unpaired device gave in its pairing request (device-supplied), for logs.
        package var claimedName: String?
        /// A newer session of the same node took over: closing this one is not the node leaving.
        package var replaced = false
        /// With the OpenClaw gateway protocol: the commands its socket there was last told to offer.
        package var openClawOffer: [String]?
        /// One of OpenClaw's own apps, at the second front door (issue 38).
        package var app: OpenClawAppClaim?
        /// It came through the browser door (issue 64): its pairing request says which tier.
        package var browser: BrowserTier?

        package var isPaired: Bool { phase == .paired }
    }

    /// What the driver knows of a connection when its handshake completes.
    package struct Opening {
        package var id: ConnectionID
        package var handshake: SecureSession.HandshakeResult
        package var address: String
        package var peer: String
        package var slot: AdmissionSlot?
        package var local: String? = nil
        /// One of OpenClaw's apps: what its connect proved (its `handshake` is a stand-in).
        package var app: (claim: OpenClawAppClaim, details: NodeDetails, bootstrapToken: String?)? = nil
        /// A browser at the browser door, and which tier of it.
        package var browser: BrowserTier? = nil

        package init(
            id: ConnectionID, handshake: SecureSession.HandshakeResult, address: String, peer: String, slot: AdmissionSlot?,
            local: String? = nil, app: (claim: OpenClawAppClaim, details: NodeDetails, bootstrapToken: String?)? = nil,
            browser: BrowserTier? = nil
        ) {
            (self.id, self.handshake, self.address, self.peer, self.slot, self.local, self.app) = (id, handshake, address, peer, slot, local, app)
            self.browser = browser
        }
    }
}
