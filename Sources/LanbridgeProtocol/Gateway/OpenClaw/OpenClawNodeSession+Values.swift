#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What goes in and comes out of an `OpenClawNodeSession`: its configuration, the gateway's
/// invokes, how to redial, and the actions.
extension OpenClawNodeSession {
    /// What the session connects with. The tokens are secrets: never logged.
    public struct Configuration: Sendable {
        public var device: OpenClawDevice
        public var claims: OpenClawDevice.Claims
        /// Unique per node: the gateway retires silently paired devices that share a name (§3.5).
        public var displayName: String
        /// lanbridge's node ID, as the gateway's `client.instanceId`.
        public var instanceId: String
        public var version: String
        public var modelIdentifier: String?
        public var caps: [String]
        /// OpenClaw's names (`OpenClawCommands.openClawName`).
        public var commands: [String]
        /// The gateway's shared token, for the first contact and after a device token is refused.
        public var sharedToken: String?
        /// The token the gateway issued this device, once it has. When there is one, it is what the
        /// session connects with (a rotation of the shared token does not touch it).
        public var deviceToken: String?
        public var signature: OpenClawDevice.PayloadVersion = .v3
        public static let protocols = 3...4
        public static let handshakeTimeoutMs: Int64 = 15_000

        public init(
            device: OpenClawDevice, claims: OpenClawDevice.Claims, displayName: String, instanceId: String, version: String,
            modelIdentifier: String? = nil, caps: [String], commands: [String], sharedToken: String?, deviceToken: String?
        ) {
            (self.device, self.claims, self.displayName, self.instanceId, self.version) = (device, claims, displayName, instanceId, version)
            (self.modelIdentifier, self.caps, self.commands, self.sharedToken, self.deviceToken) = (modelIdentifier, caps, commands, sharedToken, deviceToken)
        }
    }

    /// An invoke for the lanbridge node, in lanbridge's vocabulary.
    public struct Invoke: Sendable, Equatable {
        public var id: String
        public var command: String
        public var params: JSONValue?
        public var timeoutMs: Int?
        public var idempotencyKey: String?
        /// Queued by the gateway while the node was in the background (`node.pending.pull`):
        /// its answer goes nowhere, the action is acknowledged once run.
        public var queued: Bool
    }

    /// How the next connection should differ, when the gateway said why it refused this one.
    public enum Retry: Sendable, Equatable {
        /// Back off and try again as before.
        case backoff
        /// The gateway does not know v3 signatures: sign v2 (at once).
        case signV2
        /// The device token was refused: forget it, connect with the shared token (at once, once).
        case sharedToken
        /// The shared token was refused, this connect carried no device token, and the gateway says
        /// one would get in (`details.canRetryWithDeviceToken` or `recommendedNextStep:
        /// "retry_with_device_token"`, as upstream's client reads them): if the bridge holds the
        /// node's device token, connect with it at once; if not, a person must fix the shared token.
        case deviceToken
        /// Needs a person: fix the configuration. Retried slowly.
        case operatorNeeded(String)
        /// The gateway holds the device for its operator's approval (`PAIRING_REQUIRED`), under this
        /// request when it said which. Retried often enough that an approval takes effect soon; the
        /// gateway keeps one request per device across the retries.
        case deviceApproval(requestId: String?)
        /// The bridge closed the socket to offer a changed set of commands: at once.
        case reoffer
    }

    public enum Action: Sendable, Equatable {
        /// A text frame for the gateway.
        case send([UInt8])
        /// `hello-ok`: the session is up.
        case connected(protocolVersion: Int)
        /// The gateway issued (or rotated) this device's token: store it (0600).
        case storeDeviceToken(String)
        /// Run this invoke on the node; answer with `nodeAnswered`.
        case invoke(Invoke)
        /// The gateway gave up on an invoke: stop waiting for it.
        case cancel(invokeId: String)
        /// The gateway answered (or, the session ending, never will answer) a `nodeEvent` sent with `tag`.
        case eventAnswered(tag: String, Result<JSONValue?, ErrorMessage>)
        /// The gateway's canvas capability for this socket (from `hello-ok.canvasHostUrl`, then
        /// `node.canvas.capability.refresh`): what lanbridge's canvas relay presents upstream for
        /// this node. A secret of the gateway's: never sent to the LAN, never logged.
        case canvasCapability(String)
        /// The gateway took the acknowledgement of actions it had queued for the node while it was
        /// in the background (`node.pending.ack`), and says how many are still queued.
        case queueAcknowledged(count: Int, remaining: Int)
        /// Close the socket.
        case close(reason: String, retry: Retry)
    }

    // MARK: - Canvas capabilities, as the gateway writes them

    /// The capability in a `canvasHostUrl` (`http://host:port/__openclaw__/cap/<cap>`), if any.
    static func canvasCapability(inHostURL url: String) -> String? {
        let marker = "/__openclaw__/cap/"
        guard let range = url.firstRange(of: marker) else { return nil }
        let capability = String(url[range.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" })
        return isCapability(capability) ? capability : nil
    }

    /// base64url, 8–128 characters: anything else is not passed on.
    static func isCapability(_ text: String) -> Bool {
        (8...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }
}
