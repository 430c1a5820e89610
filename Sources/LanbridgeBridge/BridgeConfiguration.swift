import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState

public struct BridgeConfiguration: Sendable {
    /// Where to listen.
    public enum Bind: Sendable, Equatable, CustomStringConvertible {
        /// Every interface (the default): nodes on the LAN can connect.
        case lan
        case loopback
        /// One address, e.g. a tailnet IP.
        case address(String)

        public init(_ text: String) {
            switch text {
            case "lan": self = .lan
            case "loopback": self = .loopback
            default: self = .address(text)
            }
        }

        public var host: String {
            switch self {
            case .lan: "0.0.0.0"
            case .loopback: "127.0.0.1"
            case let .address(address): address
            }
        }

        public var description: String {
            switch self {
            case .lan: "lan"
            case .loopback: "loopback"
            case let .address(address): address
            }
        }
    }

    public static let defaultPort = 18790

    public var stateDirectory: StateDirectory
    public var port: Int = defaultPort
    public var bind: Bind = .lan
    public var name: String
    public var admission = AdmissionPolicy.Limits()
    /// How long a connection may take to finish the Noise handshake.
    public var handshakeTimeout: TimeInterval = 5
    /// The bridge pings every connection this often...
    public var pingInterval: TimeInterval = 15
    /// ...and drops one that has sent nothing for this long: a half-open connection is found within it.
    public var idleTimeout: TimeInterval = 40
    public var limits = TransportLimits()
    public var pairingTiming = PairingState.Timing.standard
    /// Advertise `_lanbridge._tcp` through avahi-daemon.
    public var mdns = true
    /// The config file: gateway link, access-rule defaults, limits.
    public var settings = BridgeSettings()
    /// The gateway to dial, with its token; nil runs without a gateway link.
    public var gateway: Gateway?
    /// Serve `lanbridge nodes invoke` on `control.sock` in the state directory.
    public var controlSocket = true
    /// The `/metrics` and `/healthz` endpoint, if enabled.
    public var metrics: ListenAddress?
    /// The approval console, if enabled. On the same address as `metrics`, one listener serves both.
    public var console: ListenAddress?
    /// The console's address was not chosen by the admin: if it is taken, warn and run without it.
    public var consoleOptional = false

    public struct Gateway: Sendable {
        public var endpoint: GatewayEndpoint
        public var token: SecureBytes
        /// PEM trust roots for a wss:// gateway; nil uses the system's.
        public var trustRootsFile: String?
        /// How the token is shown: proved without sending it (PROTOCOL.md §12.1), or sent as a
        /// bearer token to a gateway that cannot do the proof.
        public var auth: GatewayAuth = .proof
        /// Who may own the gateway's listening socket (loopback TCP or Unix): root and the daemon's
        /// own user unless configured.
        public var owners: Set<UInt32> = [0, getuid()]
        /// PROTOCOL.md §12, or OpenClaw's node protocol (one socket per node).
        public var wire: GatewayWire = .lanbridge
        public init(endpoint: GatewayEndpoint, token: SecureBytes, trustRootsFile: String? = nil) {
            (self.endpoint, self.token, self.trustRootsFile) = (endpoint, token, trustRootsFile)
        }
    }

    public enum GatewayAuth: String, Sendable {
        case proof, bearer
    }

    public enum GatewayWire: String, Sendable {
        case lanbridge, openclaw
    }

    public init(stateDirectory: StateDirectory, name: String) {
        self.stateDirectory = stateDirectory
        self.name = name
    }
}
