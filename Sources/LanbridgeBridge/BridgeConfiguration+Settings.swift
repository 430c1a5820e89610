import FoundationEssentials
import Glibc
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeDiscovery
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// The daemon's configuration from config.json and what the command line overrides (issue 39: the
/// CLI only parses; the rules for which wins, and what follows from what, live here, once).
extension BridgeConfiguration {
    /// What `lanbridge serve` was told, each over its config.json entry; nil or false: not given.
    public struct Overrides: Sendable {
        public var name: String?
        public var port = BridgeConfiguration.defaultPort
        public var listen: [String] = []
        /// Durations: nil keeps `BridgeConfiguration`'s (and `PairingState.Timing`'s) defaults.
        public var pairingTTL: TimeInterval?
        public var pairingMaxWait: TimeInterval?
        public var noMDNS = false
        public var pingInterval: TimeInterval?
        public var idleTimeout: TimeInterval?
        public var gatewayURL: String?
        /// `$LANBRIDGE_GATEWAY_TOKEN`: before any token file.
        public var gatewayTokenFromEnvironment: String?
        public var gatewayTokenFile: String?
        public var allowRemoteGateway = false
        public var gatewayCAFile: String?
        public var noGateway = false
        public var gatewayAuth: String?
        public var gatewayProtocol: String?
        public var gatewayOwners: [String] = []
        public var metricsListen: String?
        public var metricsAllowRemote = false
        public var uiListen: String?
        public var uiAllowRemote = false
        public var noUI = false
        public var canvasListen: String?
        public var noCanvas = false
        public var openClawApps = false
        public var openClawAppsListen: String?
        public var browser = false
        public var browserListen: String?

        public init() {}
    }

    /// Why a configuration cannot be made: a flag given wrong (`usage`, the CLI's exit 64), or the
    /// files or the system (`configuration`).
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public enum Kind: Sendable { case usage, configuration }
        public let kind: Kind
        public let description: String
        static func usage(_ text: String) -> Problem { Problem(kind: .usage, description: text) }
        static func configuration(_ text: String) -> Problem { Problem(kind: .configuration, description: text) }
    }

    /// The configuration `serve` runs with. `warn` hears what is allowed but worth saying. Throws
    /// `Problem`, or the store's and the endpoint's own errors (a token file that cannot be read,
    /// a gateway URL refused).
    public init(
        stateDirectory: StateDirectory, settings: BridgeSettings, overrides: Overrides, interfaces: [NetworkInterfaces.Address],
        hostName: String, warn: (String) -> Void
    ) throws {
        self.init(stateDirectory: stateDirectory, name: overrides.name ?? hostName)
        self.settings = settings
        port = overrides.port
        do throws(ListenProblem) {
            listen = try Bind.list(overrides.listen.isEmpty ? settings.listen : overrides.listen, interfaces: interfaces)
        } catch { throw Problem.usage("\(error)") }
        addresses = settings.addresses.compactMap { ReachableAddress($0, defaultPort: port == 0 ? Self.defaultPort : port) }
        if let ttl = overrides.pairingTTL { pairingTiming.timeToLive = ttl }
        if let wait = overrides.pairingMaxWait { pairingTiming.hardCap = wait }
        pairingTiming.hardCap = max(pairingTiming.hardCap, pairingTiming.timeToLive)
        mdns = !overrides.noMDNS
        if let interval = overrides.pingInterval { pingInterval = interval }
        if let timeout = overrides.idleTimeout { idleTimeout = timeout }
        admission = AdmissionPolicy.Limits(settings.admission, listeners: listen.count)
        gateway = try Self.gateway(settings, overrides, warn: warn)
        if let problem = settings.wake.problem("wake") ?? settings.notify.hook.problem("notify") { throw Problem.configuration(problem) }

        if let text = overrides.metricsListen {
            do throws(ListenAddress.Problem) {
                metrics = try ListenAddress(text, allowRemote: overrides.metricsAllowRemote || settings.metrics.allowRemote)
            } catch { throw Problem.usage("--metrics-listen: \(error)") }
        } else {
            metrics = settings.metrics.listen
        }

        if !overrides.noUI, settings.console.enabled {
            let allowRemote = overrides.uiAllowRemote || settings.console.allowRemote
            if let text = overrides.uiListen {
                do throws(ListenAddress.Problem) {
                    console = try ListenAddress(text, allowRemote: allowRemote)
                } catch { throw Problem.usage("--ui-listen: \(error)") }
            } else {
                console = try settings.console.listen ?? ListenAddress(BridgeSettings.Console.defaultListen, allowRemote: false)
            }
            consoleOptional = overrides.uiListen == nil && settings.console.listen == nil
            if let address = console, !address.isLoopback {
                warn("the console listens on \(ListenAddress.format(host: address.host, port: address.port)), which is not loopback: anyone who reaches it sees its login page")
            }
        }

        canvas = try Self.canvas(settings, overrides, gateway: gateway, warn: warn)
        let apps = settings.openClawApps
        if overrides.openClawApps || apps.enabled {
            let text = overrides.openClawAppsListen ?? apps.listen ?? ":\(BridgeSettings.OpenClawApps.defaultPort)"
            guard let place = CanvasListen(text) else { throw Problem.usage("--openclaw-apps-listen: expected PORT, :PORT or HOST:PORT, not \(text)") }
            if apps.plainWebSocket {
                warn(
                    "OpenClaw's apps connect over plain ws:// (openclawApps.plainWebSocket): Android only, and anyone on the LAN can read the traffic; it is refused on public addresses"
                )
            }
            openClawApps = (place, !apps.plainWebSocket)
        }
        if overrides.browser || settings.browser.enabled {
            let text = overrides.browserListen ?? settings.browser.listen ?? ":\(BridgeSettings.Browser.defaultPort)"
            guard let place = CanvasListen(text) else { throw Problem.usage("--browser-listen: expected PORT, :PORT or HOST:PORT, not \(text)") }
            browser = (place, settings.browser)
        }
    }

    /// The gateway to dial and its token, or nil (with a warning) when no token is configured.
    /// SIGHUP calls it again with the reread settings, for the token.
    public static func gateway(_ settings: BridgeSettings, _ overrides: Overrides, warn: (String) -> Void) throws -> Gateway? {
        guard !overrides.noGateway, settings.gateway.enabled else { return nil }
        let endpoint = try GatewayEndpoint(overrides.gatewayURL ?? settings.gateway.url, allowRemote: overrides.allowRemoteGateway || settings.gateway.allowRemote)
        let token: SecureBytes
        if let value = overrides.gatewayTokenFromEnvironment, !value.isEmpty {
            token = SecureBytes(copying: Array(value.utf8))
        } else if let path = overrides.gatewayTokenFile ?? settings.gateway.tokenFile {
            guard let contents = try SecretFile.read(URL(fileURLWithPath: path), maxLength: 4096) else { throw Problem.configuration("gateway token file \(path) does not exist") }
            token = contents.trimmingWhitespace()
            guard token.count > 0 else { throw Problem.configuration("gateway token file \(path) is empty") }
        } else {
            if overrides.gatewayURL != nil { throw Problem.configuration("--gateway needs a token: set LANBRIDGE_GATEWAY_TOKEN or --gateway-token-file") }
            warn("gateway link off: no token (set LANBRIDGE_GATEWAY_TOKEN, --gateway-token-file or gateway.tokenFile; --no-gateway silences this)")
            return nil
        }
        let roots = overrides.gatewayCAFile ?? settings.gateway.caFile
        if let roots, access(roots, R_OK) != 0 { throw Problem.configuration("gateway CA file \(roots) cannot be read") }
        var link = Gateway(endpoint: endpoint, token: token, trustRootsFile: roots)
        guard let wire = GatewayWire(rawValue: overrides.gatewayProtocol ?? settings.gateway.wire) else {
            throw Problem.usage("--gateway-protocol takes lanbridge or openclaw")
        }
        link.wire = wire
        guard let mode = GatewayAuth(rawValue: overrides.gatewayAuth ?? settings.gateway.auth) else { throw Problem.usage("--gateway-auth takes proof or bearer") }
        link.auth = mode
        if mode == .bearer {
            warn("gateway.auth is bearer: the token is sent to the gateway as it is (only after its socket's owner is checked)")
        }
        let owners = overrides.gatewayOwners.isEmpty ? settings.gateway.owners : overrides.gatewayOwners
        if !owners.isEmpty {
            var uids: Set<UInt32> = []
            for name in owners {
                if let uid = UInt32(name) { uids.insert(uid); continue }
                guard let entry = getpwnam(name) else { throw Problem.configuration("gateway owner \(name): no such user") }
                uids.insert(entry.pointee.pw_uid)
            }
            link.owners = uids
        }
        return link
    }

    /// The canvas relay's place and upstream, or nil when off: `--no-canvas`, `canvas.enabled:
    /// false`, or no canvas host (not OpenClaw, no `canvas.upstream`; a remote OpenClaw gateway's
    /// canvas is not relayed).
    static func canvas(_ settings: BridgeSettings, _ overrides: Overrides, gateway: Gateway?, warn: (String) -> Void) throws(Problem) -> Canvas? {
        guard !overrides.noCanvas, settings.canvas.enabled else { return nil }
        let upstream: CanvasUpstream
        let openClaw = gateway?.wire == .openclaw
        if openClaw, let endpoint = gateway?.endpoint {
            if let path = endpoint.socketPath {
                upstream = .unix(path: path)
            } else if !endpoint.secure, let local = CanvasUpstream("http://\(endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host):\(endpoint.port)") {
                upstream = local
            } else {
                warn("canvas relay off: the OpenClaw gateway is not on this machine's loopback, so its canvas is not relayed")
                return nil
            }
        } else if let text = settings.canvas.upstream, let configured = CanvasUpstream(text) {
            upstream = configured
        } else {
            return nil
        }
        let text = overrides.canvasListen ?? settings.canvas.listen ?? ":\(BridgeSettings.Canvas.defaultPort)"
        guard let place = CanvasListen(text) else { throw Problem.usage("--canvas-listen: expected PORT, :PORT or HOST:PORT, not \(text)") }
        return Canvas(listen: place, upstream: upstream, openClaw: openClaw, optional: overrides.canvasListen == nil && settings.canvas.listen == nil)
    }
}
