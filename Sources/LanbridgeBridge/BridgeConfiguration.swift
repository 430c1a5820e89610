import FoundationEssentials
import Glibc
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeDiscovery
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

        /// `--listen` entries as given, checked together: an interface's name stands for its
        /// addresses (not link-local ones), a repeat is an error, and `lan` cannot be combined
        /// (it already listens on every address).
        public static func list(_ texts: [String], interfaces: [NetworkInterfaces.Address]) throws(ListenProblem) -> [Bind] {
            var out: [Bind] = []
            for text in texts {
                let named = interfaces.filter { $0.interface == text && !$0.address.lowercased().hasPrefix("fe80:") }
                let entries = named.isEmpty ? [Bind(text)] : named.map { Bind.address($0.address) }
                if named.isEmpty, interfaces.contains(where: { $0.interface == text }) { throw .noAddress(text) }
                for entry in entries {
                    guard !out.contains(where: { $0.host == entry.host }) else { throw .repeated(text) }
                    out.append(entry)
                }
            }
            if out.count > 1, out.contains(.lan) { throw .lanWithOthers }
            guard !out.isEmpty else { return [.lan] }
            return out
        }
    }

    public enum ListenProblem: Error, Equatable, CustomStringConvertible {
        case repeated(String), lanWithOthers, noAddress(String), empty
        public var description: String {
            switch self {
            case let .repeated(text): "--listen \(text): that address is already listed"
            case .lanWithOthers: "--listen lan already listens on every address; list the addresses instead (e.g. --listen 192.168.1.10 --listen tailscale0)"
            case let .noAddress(name): "--listen \(name): that interface has no usable address"
            case .empty: "nothing to listen on: give at least one --listen"
            }
        }
    }

    public static let defaultPort = 18790

    public var stateDirectory: StateDirectory
    public var port: Int = defaultPort
    /// Every address to listen on, all on `port`, in order of preference (the first one's
    /// interface is where mDNS advertises). `lan` listens on all and so stands alone.
    public var listen: [Bind] = [.lan]
    /// Where devices should dial, first choice first (invites, `welcome.addresses`); empty:
    /// derived from `listen` and this host's interfaces.
    public var addresses: [ReachableAddress] = []
    public var name: String
    public var admission = AdmissionPolicy.Limits()
    /// The durations' defaults (`serve`'s flags name them in their help, and override them).
    public enum Defaults {
        public static let handshakeTimeout: TimeInterval = 5
        public static let pingInterval: TimeInterval = 15
        public static let idleTimeout: TimeInterval = 40
    }
    /// How long a connection may take to finish the Noise handshake.
    public var handshakeTimeout = Defaults.handshakeTimeout
    /// The bridge pings every connection this often...
    public var pingInterval = Defaults.pingInterval
    /// ...and drops one that has sent nothing for this long: a half-open connection is found within it.
    public var idleTimeout = Defaults.idleTimeout
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
    /// The canvas relay, if on (issue 37): where it listens and what it fetches from.
    public var canvas: Canvas?
    /// The front door for OpenClaw's apps, if on (issue 38): where, and whether with TLS.
    public var openClawApps: (listen: CanvasListen, tls: Bool)?
    /// The browser door, if on (issue 64): where it listens, and with which certificate.
    public var browser: (listen: CanvasListen, settings: BridgeSettings.Browser)?

    public struct Canvas: Sendable {
        public var listen: CanvasListen
        public var upstream: CanvasUpstream
        /// OpenClaw's canvas host: requests carry the node socket's capability.
        public var openClaw: Bool
        /// Not chosen by the admin: if the port is taken, warn and run without the relay.
        public var optional: Bool
        public init(listen: CanvasListen, upstream: CanvasUpstream, openClaw: Bool, optional: Bool) {
            (self.listen, self.upstream, self.openClaw, self.optional) = (listen, upstream, openClaw, optional)
        }
    }

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

extension BridgeSettings.Hook {
    /// Why this hook (`name`: wake, notify) cannot run here, if it cannot: `serve` refuses to start
    /// with it, and a reload keeps the running settings.
    public func problem(_ name: String) -> String? {
        guard let exec else { return nil }
        guard access(exec, X_OK) == 0, PathKind.isDirectory(exec) != true else { return "\(name).exec \(exec) is not an executable file" }
        guard HookProcess.isSupported else { return "\(name).exec: this C library cannot close inherited descriptors in a child (glibc 2.34 or later needed)" }
        return nil
    }
}
