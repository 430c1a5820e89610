import FoundationEssentials
import Glibc

/// What the running daemon knows that the files do not: which nodes are connected, and whether they
/// are in the foreground. The daemon rewrites `runtime.json` when that changes; the CLI trusts it
/// only while the daemon's pid is alive, so a crashed daemon never shows stale connections.
public struct RuntimeStatus: Codable, Equatable, Sendable {
    public struct Node: Codable, Equatable, Sendable {
        public var address: String
        public var foreground: Bool
        public var connectedAt: Date
        /// With the OpenClaw gateway protocol: the node's device ID there, and its session's state.
        public var gatewayDeviceId: String?
        public var gatewaySession: String?
        /// With the OpenClaw gateway protocol: what the gateway holds for its operator, if anything.
        public var gatewayApproval: GatewayApproval?
        public init(address: String, foreground: Bool, connectedAt: Date) {
            (self.address, self.foreground, self.connectedAt) = (address, foreground, connectedAt)
        }
    }

    /// Something an OpenClaw gateway holds for its own operator's approval (its second approval,
    /// after lanbridge's own).
    public struct GatewayApproval: Codable, Equatable, Sendable {
        public enum Kind: String, Codable, Sendable {
            /// The node's device: no session until it is approved.
            case device
            /// Written by lanbridge until 6c1e032 only, which guessed that the gateway held added commands (it
            /// does not tell a node so); read for such a daemon's runtime.json.
            case commands
        }

        public var kind: Kind
        /// The gateway's request, when it said (it tells nodes the device's, not the commands').
        public var requestId: String?
        /// The added commands (OpenClaw's names), for `commands`.
        public var commands: [String]?
        /// What the gateway's operator runs there.
        public var approveWith: String

        public init(kind: Kind, requestId: String? = nil, commands: [String]? = nil, approveWith: String) {
            (self.kind, self.requestId, self.commands, self.approveWith) = (kind, requestId, commands, approveWith)
        }

        /// The device, held under `requestId`.
        public static func device(_ requestId: String?) -> Self {
            Self(kind: .device, requestId: requestId, approveWith: "openclaw devices approve \(requestId ?? "<requestId from: openclaw devices list>")")
        }

        /// One line for status, doctor and the log.
        public var summary: String {
            switch kind {
            case .device: "waiting for the gateway's approval of the device: \(approveWith)"
            case .commands: "waiting for the gateway's approval of \((commands ?? []).joined(separator: ", ")): \(approveWith)"
            }
        }
    }

    /// The file's format (StateFormat's `.runtime`); absent before 0.10.0, which means 1.
    public var version: Int? = StateFormat.current.version(.runtime)
    public var pid: Int32
    public var bridgeName: String
    public var listening: [String]
    /// Where devices should dial, best first (`welcome.addresses`, invites); nil before listening.
    public var reachable: [String]?
    public var startedAt: Date
    /// Keyed by node ID.
    public var nodes: [String: Node]
    /// mDNS advertising: "off", "waiting for avahi-daemon", "registering", "published", "failed: …".
    public var mdns: String?
    /// The instance name it is published under (it may differ from the configured name after a collision).
    public var mdnsName: String?
    /// The gateway link: "connected to …", "connecting to …", "down: WHY; next try at …", "off".
    public var gateway: String?
    /// The operator's control socket (`nodes invoke`), once it listens.
    public var controlSocket: String?
    /// The approval console's base URL, when it is on.
    public var console: String?
    /// The canvas relay, when it is on.
    public var canvas: Canvas?
    /// With the OpenClaw gateway protocol: each paired node's device ID at the gateway, node ID →
    /// device ID, connected or not (`nodes describe`, and the cleanup `nodes revoke` prints).
    public var openClawDevices: [String: String]?
    /// Why the state directory takes no writes, and since when ("read-only file system since
    /// 2026-11-29T07:40:00Z"); nil while it does. (On a read-only file system this file cannot be
    /// written either: `lanbridge status` looks at the directory itself too.)
    public var stateProblem: String?
    /// The front door for OpenClaw's apps, when it is on: `wss://host:port` (or `ws://`) each.
    public var openClawApps: [String]?
    /// SHA-256 of the certificate that door serves (the canvas relay's too), lowercase hex; nil with plain ws.
    public var openClawAppsTlsSha256: String?
    /// The browser door, when it is on (issue 64): `https://name:port/` for each name of the bridge CA.
    public var browser: [String]?
    public struct Canvas: Codable, Sendable, Equatable {
        /// `host:port` of each listener.
        public var listening: [String]
        /// SHA-256 of its certificate (what nodes pin), lowercase hex.
        public var tlsSha256: String
        /// The canvas host it fetches from.
        public var upstream: String
        public init(listening: [String], tlsSha256: String, upstream: String) { (self.listening, self.tlsSha256, self.upstream) = (listening, tlsSha256, upstream) }
    }

    public init(pid: Int32 = getpid(), bridgeName: String, listening: [String], startedAt: Date, nodes: [String: Node] = [:]) {
        (self.pid, self.bridgeName, self.listening, self.startedAt, self.nodes) = (pid, bridgeName, listening, startedAt, nodes)
    }
}
