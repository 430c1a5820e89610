import FoundationEssentials
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// The identities lanbridge holds at an OpenClaw gateway, one per paired node
/// (`openclaw-devices.json`, mode 0600: the seeds and the gateway's device tokens are secrets).
/// Only the daemon reads and writes it; the device IDs reach the CLI through runtime.json.
///
/// A node's identity is made the first time it connects with the OpenClaw gateway protocol on, and
/// removed when its pairing is: on revocation, and at every start for nodes revoked while the
/// daemon was down (`keepOnly`). Its platform and device family are fixed at creation, as the
/// gateway pins them.
public struct OpenClawDevices: Sendable {
    public static let fileName = StateFormat.File.openClawDevices.rawValue

    public struct Record: Codable, Sendable, Equatable {
        /// The Ed25519 seed, base64url.
        public var seed: String
        public var platform: String
        public var deviceFamily: String
        /// The token the gateway issued, once it has.
        public var deviceToken: String?
        /// What lanbridge until 6c1e032 believed the gateway had approved of the node's commands (a guess:
        /// the gateway tells a node no such thing). Read and kept, no longer used or written.
        public var approvedCommands: [String]?

        /// The device its seed makes; nil for a seed that is not base64url.
        var device: OpenClawDevice? {
            get throws {
                guard let seed = Base64URL.decode(seed) else { return nil }
                return OpenClawDevice(key: try Ed25519.KeyPair(seed: SecureBytes(copying: seed)))
            }
        }
    }

    private let file: NodeSecrets<Record>
    public var url: URL { file.url }
    public init(directory: StateDirectory) { file = NodeSecrets(.openClawDevices, in: directory, table: "devices") }

    /// The node's device, made (and stored) if it has none.
    public func device(for node: Fingerprint, platform: String) throws -> (OpenClawDevice, Record) {
        try file.update { devices in
            if let record = devices[node.description], let device = try record.device { return (device, record) }
            let key = Ed25519.KeyPair.generate()
            let (platform, family) = Self.claims(platform)
            let record = Record(seed: key.seed.withUnsafeBytes { Base64URL.encode($0) }, platform: platform, deviceFamily: family)
            devices[node.description] = record
            return (OpenClawDevice(key: key), record)
        }
    }

    /// Stores (or, with nil, forgets) the gateway's token for the node.
    public func setDeviceToken(_ token: String?, for node: Fingerprint) throws {
        try file.update { devices in
            if devices[node.description] != nil { devices[node.description]?.deviceToken = token }
        }
    }

    /// Forgets the node's identity (its pairing is gone).
    public func forget(_ node: Fingerprint) throws {
        try file.update { $0[node.description] = nil }
    }

    /// Forgets every identity but those of `nodes` (the paired ones). Returns the device ID at the
    /// gateway of every identity, kept or gone (a device ID is no secret: the SHA-256 of a public key).
    public func keepOnly(_ nodes: Set<Fingerprint>) throws -> (kept: [Fingerprint: String], removed: [Fingerprint: String]) {
        var kept: [Fingerprint: String] = [:], removed: [Fingerprint: String] = [:]
        for (id, record) in try file.read() {
            guard let node = Fingerprint(id), let device = try? record.device else { continue }
            if nodes.contains(node) { kept[node] = device.deviceId } else { removed[node] = device.deviceId }
        }
        if !removed.isEmpty { try file.keepOnly(nodes) }
        return (kept, removed)
    }

    /// OpenClaw's `client.platform` and `deviceFamily` for a lanbridge platform. `ios` matters:
    /// the gateway queues foreground-only commands only for nodes whose platform starts with it.
    static func claims(_ platform: String) -> (String, String) {
        switch platform {
        case "ios": ("ios", "iPhone")
        case "android": ("android", "Android")
        case "macos": ("macos", "Mac")
        default: ("linux", "Linux")
        }
    }
}
