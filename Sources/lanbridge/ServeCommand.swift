import ArgumentParser
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LanbridgeBridge
import LanbridgeCrypto
import LanbridgeDiscovery
import LanbridgeProtocol
import LanbridgeNet
import LanbridgeFiles
import LanbridgeState
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the bridge daemon.",
        discussion: """
        Listens for nodes, runs the Noise handshake on every connection, and lets unpaired nodes do nothing but ask to pair. Pairing requests wait for `lanbridge nodes approve`. Stops cleanly on SIGTERM or SIGINT.

        The bridge dials the agent gateway (default ws://127.0.0.1:18789, or a Unix socket: --gateway unix:/run/gateway/gateway.sock) and keeps that link up; the gateway stays on loopback and nodes never reach it. The token comes from $LANBRIDGE_GATEWAY_TOKEN or a 0600 file (--gateway-token-file, or gateway.tokenFile in the config). Without a token the link stays off, with a warning.

        Before a byte is sent, the owner of the gateway's listening socket must be root or lanbridge's own user (--gateway-owner to name others), so a local user who binds the port while the gateway is down hears nothing. The token is then proved, never sent (--gateway-auth bearer sends it, for gateways that cannot do the proof).

        Logs go to stderr: aligned on a terminal, one key=value line per event otherwise (journald).
        """
    )

    @OptionGroup var state: StateOptions
    @Option(help: "TCP port to listen on (0: any free one).") var port = Port(argument: String(BridgeConfiguration.defaultPort))!
    @Option(name: [.customLong("listen"), .customLong("bind")],
            help: ArgumentHelp("Where to listen: lan (every interface), loopback, an address (a tailnet IP) or an interface's name (tailscale0); repeat for several, first choice first, all on --port. Default: the config's listen, else lan. (--bind is the old name.)",
                               valueName: "lan|loopback|address|interface"))
    var listen: [String] = []
    @Option(help: "Display name nodes see. Default: the host name.") var name: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel = "info"
    @Option(help: "How long a pairing request waits after the device's last sign of life: 90s, 5m.") var pairingTTL = Duration(argument: "5m")!
    @Option(help: "The longest a connected device's pairing request can wait.") var pairingMaxWait = Duration(argument: "15m")!
    @Flag(name: .customLong("no-mdns"), help: "Do not advertise on mDNS (nodes then need the address).") var noMDNS = false
    @Option(help: "Ping every connection this often.") var pingInterval = Duration(argument: "15s")!
    @Option(help: "Drop a connection silent for this long (finds half-open connections).") var idleTimeout = Duration(argument: "40s")!

    @Option(help: ArgumentHelp("The gateway's WebSocket URL. Default: the config's gateway.url, else ws://127.0.0.1:18789.", valueName: "url"))
    var gateway: String?
    @Option(help: ArgumentHelp("File (mode 0600) holding the gateway token, if $LANBRIDGE_GATEWAY_TOKEN is not set.", valueName: "file"))
    var gatewayTokenFile: String?
    @Flag(help: "Allow a gateway that is not on loopback (it must then use wss://).") var allowRemoteGateway = false
    @Option(help: ArgumentHelp("PEM trust roots for a wss:// gateway. Default: the system's.", valueName: "file"))
    var gatewayCaFile: String?
    @Flag(help: "Run without a gateway link.") var noGateway = false
    @Option(help: ArgumentHelp("How the bridge shows the token: proof (never sends it; the gateway proves it first) or bearer (sends it, for a gateway that cannot do the proof). Default: the config's gateway.auth, else proof.", valueName: "proof|bearer"))
    var gatewayAuth: String?
    @Option(help: ArgumentHelp("What the gateway speaks: lanbridge (PROTOCOL.md §12) or openclaw (each connected node gets its own role-node socket at an OpenClaw gateway). Default: the config's gateway.protocol, else lanbridge.", valueName: "lanbridge|openclaw"))
    var gatewayProtocol: String?
    @Option(help: ArgumentHelp("Serve /metrics (Prometheus) and /healthz on this loopback address, e.g. 127.0.0.1:18791. Default: the config's metrics.listen, else off.", valueName: "host:port"))
    var metricsListen: String?
    @Flag(help: "Allow --metrics-listen on an address that is not loopback (the endpoint has no authentication).") var metricsAllowRemote = false
    @Option(help: ArgumentHelp("Serve the approval console on this address (log in with `lanbridge ui`). Default: the config's ui.listen, else \(BridgeSettings.Console.defaultListen); if that default is taken the daemon runs without it.", valueName: "host:port"))
    var uiListen: String?
    @Flag(help: "Allow --ui-listen on an address that is not loopback (anyone who can reach it sees the login page; use an SSH tunnel instead).") var uiAllowRemote = false
    @Flag(help: "Run without the approval console.") var noUi = false
    @Option(help: ArgumentHelp("Serve the agent's canvas to paired nodes over HTTPS on this port of each listen address (or on HOST:PORT only). Default: the config's canvas.listen, else 18793; if that default is taken the daemon runs without it. On only with a canvas host: the OpenClaw gateway's, or the config's canvas.upstream.", valueName: "port|host:port"))
    var canvasListen: String?
    @Flag(help: "Run without the canvas relay.") var noCanvas = false
    @Flag(help: "Let OpenClaw's own iOS, Android and macOS apps pair and connect, as to an OpenClaw gateway (wss, the bridge's certificate). Default: the config's openclawApps.enabled, else off.")
    var openclawApps = false
    @Option(help: ArgumentHelp("Where OpenClaw's apps connect: a port on each listen address, or HOST:PORT. Default: the config's openclawApps.listen, else \(BridgeSettings.OpenClawApps.defaultPort).", valueName: "port|host:port"))
    var openclawAppsListen: String?
    @Option(help: ArgumentHelp("A user (name or uid) who may own the gateway's listening socket; repeat for more. Default: root and the user lanbridge runs as.", valueName: "user"))
    var gatewayOwner: [String] = []

    func run() async throws {
        try await Output.runAsync { try await serve() }
    }

    private func serve() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown log level \(logLevel)") }
        let logger = Logger(label: "lanbridge") { LineLogHandler(label: $0, level: level) }
        var configuration = BridgeConfiguration(stateDirectory: state.directory, name: name ?? ProcessInfo.processInfo.hostName)
        configuration.port = port.value
        configuration.settings = try state.settings()
        do throws(BridgeConfiguration.ListenProblem) {
            let entries = listen.isEmpty ? configuration.settings.listen : listen
            configuration.listen = try BridgeConfiguration.Bind.list(entries, interfaces: NetworkInterfaces.addresses())
        } catch { throw ValidationError("\(error)") }
        configuration.addresses = configuration.settings.addresses.compactMap { ReachableAddress($0, defaultPort: port.value == 0 ? BridgeConfiguration.defaultPort : port.value) }
        configuration.pairingTiming.timeToLive = pairingTTL.seconds
        configuration.pairingTiming.hardCap = max(pairingMaxWait.seconds, pairingTTL.seconds)
        configuration.mdns = !noMDNS
        configuration.pingInterval = pingInterval.seconds
        configuration.idleTimeout = idleTimeout.seconds
        configuration.admission = AdmissionPolicy.Limits(configuration.settings.admission, listeners: configuration.listen.count)
        configuration.gateway = try gatewayLink(configuration.settings, logger: logger)
        if let problem = configuration.settings.wake.problem { throw ConfigurationProblem(description: problem) }
        if let exec = configuration.settings.wake.exec { logger.info("wake hook: \(exec)") }
        if let metricsListen {
            do throws(ListenAddress.Problem) {
                configuration.metrics = try ListenAddress(metricsListen, allowRemote: metricsAllowRemote || configuration.settings.metrics.allowRemote)
            } catch { throw ValidationError("--metrics-listen: \(error)") }
        } else {
            configuration.metrics = configuration.settings.metrics.listen
        }
        let console = configuration.settings.console
        if !noUi, console.enabled {
            let allowRemote = uiAllowRemote || console.allowRemote
            if let uiListen {
                do throws(ListenAddress.Problem) {
                    configuration.console = try ListenAddress(uiListen, allowRemote: allowRemote)
                } catch { throw ValidationError("--ui-listen: \(error)") }
            } else {
                configuration.console = try console.listen ?? ListenAddress(BridgeSettings.Console.defaultListen, allowRemote: false)
            }
            configuration.consoleOptional = uiListen == nil && console.listen == nil
            if let address = configuration.console, !address.isLoopback {
                logger.warning("the console listens on \(ListenAddress.format(host: address.host, port: address.port)), which is not loopback: anyone who reaches it sees its login page")
            }
        }

        configuration.canvas = try canvasRelay(configuration, logger: logger)
        let apps = configuration.settings.openClawApps
        if openclawApps || apps.enabled {
            let text = openclawAppsListen ?? apps.listen ?? ":\(BridgeSettings.OpenClawApps.defaultPort)"
            guard let listen = CanvasListen(text) else { throw ValidationError("--openclaw-apps-listen: expected PORT, :PORT or HOST:PORT, not \(text)") }
            if apps.plainWebSocket {
                logger.warning("OpenClaw's apps connect over plain ws:// (openclawApps.plainWebSocket): Android only, and anyone on the LAN can read the traffic; it is refused on public addresses")
            }
            configuration.openClawApps = (listen, !apps.plainWebSocket)
        }

        // SIGHUP reads config.json and the gateway token file again; invalid ones keep the running settings.
        let (hangups, hangup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reload: @Sendable () throws -> BridgeServer.Reloaded = { [self] in
            let settings = try state.settings()
            if let problem = settings.wake.problem { throw ConfigurationProblem(description: problem) }
            return BridgeServer.Reloaded(settings: settings, gatewayToken: try gatewayLink(settings, logger: logger)?.token)
        }
        let server = Task { try await BridgeServer.run(configuration: configuration, logger: logger, hangups: hangups, reload: reload) }
        let signals = [SIGTERM, SIGINT, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { if number == SIGHUP { hangup.yield() } else { server.cancel() } }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        try await server.value
    }

    /// The canvas relay's place and upstream, or nil when off: `--no-canvas`, `canvas.enabled:
    /// false`, or no canvas host (not OpenClaw, no `canvas.upstream`; a remote OpenClaw gateway's
    /// canvas is not relayed).
    private func canvasRelay(_ configuration: BridgeConfiguration, logger: Logger) throws -> BridgeConfiguration.Canvas? {
        let settings = configuration.settings.canvas
        guard !noCanvas, settings.enabled else { return nil }
        let upstream: CanvasUpstream
        let openClaw = configuration.gateway?.wire == .openclaw
        if openClaw, let endpoint = configuration.gateway?.endpoint {
            if let path = endpoint.socketPath {
                upstream = .unix(path: path)
            } else if !endpoint.secure, let local = CanvasUpstream("http://\(endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host):\(endpoint.port)") {
                upstream = local
            } else {
                logger.warning("canvas relay off: the OpenClaw gateway is not on this machine's loopback, so its canvas is not relayed")
                return nil
            }
        } else if let text = settings.upstream, let configured = CanvasUpstream(text) {
            upstream = configured
        } else {
            return nil
        }
        let text = canvasListen ?? settings.listen ?? ":\(BridgeSettings.Canvas.defaultPort)"
        guard let listen = CanvasListen(text) else { throw ValidationError("--canvas-listen: expected PORT, :PORT or HOST:PORT, not \(text)") }
        return BridgeConfiguration.Canvas(listen: listen, upstream: upstream, openClaw: openClaw, optional: canvasListen == nil && settings.listen == nil)
    }

    /// The gateway to dial and its token, or nil (with a warning) when no token is configured.
    private func gatewayLink(_ settings: BridgeSettings, logger: Logger) throws -> BridgeConfiguration.Gateway? {
        guard !noGateway, settings.gateway.enabled else { return nil }
        let endpoint = try GatewayEndpoint(gateway ?? settings.gateway.url, allowRemote: allowRemoteGateway || settings.gateway.allowRemote)
        let token: SecureBytes
        if let value = ProcessInfo.processInfo.environment["LANBRIDGE_GATEWAY_TOKEN"], !value.isEmpty {
            token = SecureBytes(copying: Array(value.utf8))
        } else if let path = gatewayTokenFile ?? settings.gateway.tokenFile {
            guard let contents = try SecretFile.read(URL(fileURLWithPath: path), maxLength: 4096) else {
                throw ConfigurationProblem(description: "gateway token file \(path) does not exist")
            }
            token = contents.trimmingWhitespace()
            guard token.count > 0 else { throw ConfigurationProblem(description: "gateway token file \(path) is empty") }
        } else {
            if gateway != nil { throw ConfigurationProblem(description: "--gateway needs a token: set LANBRIDGE_GATEWAY_TOKEN or --gateway-token-file") }
            logger.warning("gateway link off: no token (set LANBRIDGE_GATEWAY_TOKEN, --gateway-token-file or gateway.tokenFile; --no-gateway silences this)")
            return nil
        }
        let roots = gatewayCaFile ?? settings.gateway.caFile
        if let roots, !FileManager.default.isReadableFile(atPath: roots) {
            throw ConfigurationProblem(description: "gateway CA file \(roots) cannot be read")
        }
        var link = BridgeConfiguration.Gateway(endpoint: endpoint, token: token, trustRootsFile: roots)
        guard let wire = BridgeConfiguration.GatewayWire(rawValue: gatewayProtocol ?? settings.gateway.wire) else {
            throw ValidationError("--gateway-protocol takes lanbridge or openclaw")
        }
        link.wire = wire
        let auth = gatewayAuth ?? settings.gateway.auth
        guard let mode = BridgeConfiguration.GatewayAuth(rawValue: auth) else { throw ValidationError("--gateway-auth takes proof or bearer") }
        link.auth = mode
        if mode == .bearer {
            logger.warning("gateway.auth is bearer: the token is sent to the gateway as it is (only after its socket's owner is checked)")
        }
        let owners = gatewayOwner.isEmpty ? settings.gateway.owners : gatewayOwner
        if !owners.isEmpty {
            link.owners = Set(try owners.map { name throws in
                if let uid = UInt32(name) { return uid }
                guard let entry = getpwnam(name) else { throw ConfigurationProblem(description: "gateway owner \(name): no such user") }
                return entry.pointee.pw_uid
            })
        }
        return link
    }
}
