import LanbridgeCrypto

/// What an `OpenClawAppSession` proves and says: the device and the actions.
extension OpenClawAppSession {
    /// The device, as its connect proved it.
    public struct Device: Sendable, Equatable {
        /// hex(SHA-256(raw Ed25519 key)), lowercase.
        public var deviceId: String
        public var publicKey: [UInt8]
        public var clientId: String
        public var platform: String
        public var deviceFamily: String?
        public var displayName: String
        public var modelIdentifier: String?
        public var version: String
        /// lanbridge's names for the commands OpenClaw knows (`OpenClawCommands.lanbridgeName`).
        public var commands: [String]
        public var caps: [String]
        public var protocolVersion: Int
        /// `auth.bootstrapToken` from an OpenClaw setup code (`lanbridge invite --openclaw`): a
        /// secret, never logged; the core redeems it once.
        public var bootstrapToken: String?

        /// The node details lanbridge keeps for it (sanitized by the core like any node's).
        public var details: NodeDetails {
            NodeDetails(
                displayName: displayName, platform: OpenClawAppSession.platformName(platform), appVersion: version, deviceModel: modelIdentifier,
                caps: caps, commands: commands, flags: CapabilityFlags(requiresForeground: true, supportsInputInjection: false))
        }
    }

    public enum Action: Sendable, Equatable {
        /// A frame for the app, as text (Android) or binary (iOS) as it sends.
        case send([UInt8], binary: Bool)
        /// The connect checked out: the core decides whether this device is paired.
        case authenticated(Device)
        /// A lanbridge session message from "the node", for the core (encoded, for the one reader).
        case toBridge([UInt8])
        /// Close with this WebSocket code.
        case close(code: UInt16, reason: String)
    }

    public static let protocols = 3...4
    public static let skewMs: Int64 = 120_000
}
