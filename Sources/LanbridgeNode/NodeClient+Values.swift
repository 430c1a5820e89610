#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import Logging
import NIOCore
import NIOPosix

/// What a `NodeClient` is configured with, and what it says: its events and its errors.
extension NodeClient {
    /// What a client needs before it runs.
    public struct Configuration: Sendable {
        /// Where `FileKeyStore` keeps the key pair and the pin (unused with another `keyStore`).
        public var stateDirectory: URL
        /// Where the key pair and the pin live; nil: `FileKeyStore` in `stateDirectory`.
        public var keyStore: (any NodeKeyStore)?
        /// What the node tells the bridge when it pairs: name, platform, commands, capabilities.
        public var details: NodeDetails
        /// Whether the app starts in the foreground (sent on every connect).
        public var foreground: Bool
        /// The first reconnect delay, in seconds; it doubles after each failure.
        public var minimumBackoff: Double = 0.5
        /// The longest reconnect delay, in seconds.
        public var maximumBackoff: Double = 30
        /// How the client reaches the bridge; nil: `TCPNodeTransport` (tests pass a `FakeBridge`).
        public var transport: (any NodeTransport)?
        /// Browses for the pinned bridge (mDNS: `AvahiBrowser` on Linux, `NetworkBridgeBrowser` on
        /// Apple platforms) while `run` runs: what it finds is tried first. Nil: no browsing.
        public var discovery: (any BridgeDiscovery)?
        /// Whether handlers run on the client's event loop (the default: a quick handler answers
        /// without a hop between threads, which costs more than the invoke). While a handler runs
        /// synchronous code, its connection reads nothing: a handler with long synchronous work
        /// (encoding a large image) should await it elsewhere, or set this false to run every
        /// handler on Swift's concurrent executor. Needs macOS 15 / iOS 18; before, always false.
        public var handlersOnEventLoop = true
        /// A configuration with the file key store in `stateDirectory`.
        public init(stateDirectory: URL, details: NodeDetails, foreground: Bool = true) {
            (self.stateDirectory, self.details, self.foreground) = (stateDirectory, details, foreground)
        }
    }

    /// What happens to the client, in order, for every subscriber of `events`.
    public enum Event: Sendable, Equatable {
        /// Paired and connected: commands may arrive.
        case connected(bridgeName: String)
        /// Show this code to the user; the operator compares it with `lanbridge nodes pending`.
        case verificationCode(String, requestId: String)
        /// The request reached the operator and waits for a decision.
        case pairingPending(requestId: String)
        /// Approved: the bridge is pinned (its fingerprint, for the user to compare).
        case paired(bridgeFingerprint: String)
        /// The connection ended; `run` reconnects unless it throws.
        case disconnected(reason: String)
        /// The bridge sent an error message (PROTOCOL.md §9.5).
        case error(code: String, message: String)
        /// Where to load the agent's canvas pages, and the certificate to pin (PROTOCOL.md §9.7):
        /// with each session's welcome, and after `refreshCanvas()`.
        case canvas(CanvasAccess)
    }

    /// Reasons to stop trying: reconnecting would not help.
    public enum ClientError: Error, Equatable, CustomStringConvertible {
        /// The bridge presented another key than the pinned one (or the invite's fingerprint).
        case bridgeKeyMismatch(expected: String, presented: String)
        /// The operator rejected this device, or its key is blocked.
        case pairingRejected
        /// The request expired before the operator decided.
        case pairingExpired
        /// The operator removed this node's pairing; the pin is forgotten.
        case revoked
        /// Another connection with this node's key took over.
        case replaced
        /// The invite was unknown, expired or used.
        case inviteRefused(String)
        /// `run()` needs a pinned bridge: pair first (`run(host:port:)` or `run(invite:)`).
        case notPaired

        /// What went wrong and what to do, for people.
        public var description: String {
            switch self {
            case let .bridgeKeyMismatch(expected, presented):
                "the bridge presented key \(presented), but this node is paired with \(expected): refusing to connect (a different machine, or someone in the middle). Re-pair deliberately if the bridge was reinstalled."
            case .pairingRejected: "the operator rejected this device"
            case .pairingExpired: "the pairing request expired before the operator approved it; run again to ask anew"
            case .revoked: "the operator revoked this device's pairing"
            case .replaced: "another connection with this node's key replaced this one (is the app running twice?)"
            case let .inviteRefused(why): "the bridge refused the invite: \(why)"
            case .notPaired: "this node is not paired with a bridge yet: pair with an address or an invite first"
            }
        }
    }
}
