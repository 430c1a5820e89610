import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
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
    @Option(
        name: [.customLong("listen"), .customLong("bind")],
        help: ArgumentHelp(
            "Where to listen: lan (every interface), loopback, an address (a tailnet IP) or an interface's name (tailscale0); repeat for several, first choice first, all on --port. Default: the config's listen, else lan. (--bind is the old name.)",
            valueName: "lan|loopback|address|interface"))
    var listen: [String] = []
    @Option(help: "Display name nodes see. Default: the host name.") var name: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel = "info"
    @Option(
        help: ArgumentHelp(
            "How long a pairing request waits after the device's last sign of life: 90s, 5m. Default: \(Output.duration(PairingState.Timing.standard.timeToLive)).",
            valueName: "duration"))
    var pairingTTL: Duration?
    @Option(
        help: ArgumentHelp(
            "The longest a connected device's pairing request can wait. Default: \(Output.duration(PairingState.Timing.standard.hardCap)).",
            valueName: "duration"))
    var pairingMaxWait: Duration?
    @Flag(name: .customLong("no-mdns"), help: "Do not advertise on mDNS (nodes then need the address).") var noMDNS = false
    @Option(help: ArgumentHelp("Ping every connection this often. Default: \(Output.duration(BridgeConfiguration.Defaults.pingInterval)).", valueName: "duration"))
    var pingInterval: Duration?
    @Option(
        help: ArgumentHelp(
            "Drop a connection silent for this long (finds half-open connections). Default: \(Output.duration(BridgeConfiguration.Defaults.idleTimeout)).",
            valueName: "duration"))
    var idleTimeout: Duration?

    @Option(help: ArgumentHelp("The gateway's WebSocket URL. Default: the config's gateway.url, else ws://127.0.0.1:18789.", valueName: "url"))
    var gateway: String?
    @Option(help: ArgumentHelp("File (mode 0600) holding the gateway token, if $LANBRIDGE_GATEWAY_TOKEN is not set.", valueName: "file"))
    var gatewayTokenFile: String?
    @Flag(help: "Allow a gateway that is not on loopback (it must then use wss://).") var allowRemoteGateway = false
    @Option(help: ArgumentHelp("PEM trust roots for a wss:// gateway. Default: the system's.", valueName: "file"))
    var gatewayCaFile: String?
    @Flag(help: "Run without a gateway link.") var noGateway = false
    @Option(
        help: ArgumentHelp(
            "How the bridge shows the token: proof (never sends it; the gateway proves it first) or bearer (sends it, for a gateway that cannot do the proof). Default: the config's gateway.auth, else proof.",
            valueName: "proof|bearer"))
    var gatewayAuth: String?
    @Option(
        help: ArgumentHelp(
            "What the gateway speaks: lanbridge (PROTOCOL.md §12) or openclaw (each connected node gets its own role-node socket at an OpenClaw gateway). Default: the config's gateway.protocol, else lanbridge.",
            valueName: "lanbridge|openclaw"))
    var gatewayProtocol: String?
    @Option(
        help: ArgumentHelp(
            "Serve /metrics (Prometheus) and /healthz on this loopback address, e.g. 127.0.0.1:18791. Default: the config's metrics.listen, else off.", valueName: "host:port"))
    var metricsListen: String?
    @Flag(help: "Allow --metrics-listen on an address that is not loopback (the endpoint has no authentication).") var metricsAllowRemote = false
    @Option(
        help: ArgumentHelp(
            "Serve the approval console on this address (log in with `lanbridge ui`). Default: the config's ui.listen, else \(BridgeSettings.Console.defaultListen); if that default is taken the daemon runs without it.",
            valueName: "host:port"))
    var uiListen: String?
    @Flag(help: "Allow --ui-listen on an address that is not loopback (anyone who can reach it sees the login page; use an SSH tunnel instead).") var uiAllowRemote = false
    @Flag(help: "Run without the approval console.") var noUi = false
    @Option(
        help: ArgumentHelp(
            "Serve the agent's canvas to paired nodes over HTTPS on this port of each listen address (or on HOST:PORT only). Default: the config's canvas.listen, else 18793; if that default is taken the daemon runs without it. On only with a canvas host: the OpenClaw gateway's, or the config's canvas.upstream.",
            valueName: "port|host:port"))
    var canvasListen: String?
    @Flag(help: "Run without the canvas relay.") var noCanvas = false
    @Flag(
        help:
            "Let OpenClaw's own iOS, Android and macOS apps pair and connect, as to an OpenClaw gateway (wss, the bridge's certificate). Default: the config's openclawApps.enabled, else off."
    )
    var openclawApps = false
    @Option(
        help: ArgumentHelp(
            "Where OpenClaw's apps connect: a port on each listen address, or HOST:PORT. Default: the config's openclawApps.listen, else \(BridgeSettings.OpenClawApps.defaultPort).",
            valueName: "port|host:port"))
    var openclawAppsListen: String?
    @Flag(
        help:
            "Serve the browser door: a page that makes any modern browser a node, over HTTPS with a certificate of the bridge's own CA (make it first with `lanbridge ca init --name HOST.local`). Default: the config's browser.enabled, else off."
    )
    var browser = false
    @Option(
        help: ArgumentHelp(
            "Where the browser door listens: a port on each listen address, or HOST:PORT. Default: the config's browser.listen, else \(BridgeSettings.Browser.defaultPort).",
            valueName: "port|host:port"))
    var browserListen: String?
    @Option(
        help: ArgumentHelp("A user (name or uid) who may own the gateway's listening socket; repeat for more. Default: root and the user lanbridge runs as.", valueName: "user"))
    var gatewayOwner: [String] = []

    func run() async throws {
        try await Output.runAsync { try await serve() }
    }

    private func serve() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown log level \(logLevel)") }
        let logger = Logger(label: "lanbridge") { LineLogHandler(label: $0, level: level) }
        if AllocatorPolicy.keepLargeBuffers() { AllocatorPolicy.startGivingBack() } else { logger.debug("allocator policy not applied: no mallopt here") }
        let warn: (String) -> Void = { logger.warning("\($0)") }
        let configuration = try Self.checked {
            try BridgeConfiguration(
                stateDirectory: state.directory, settings: try state.settings(), overrides: overrides,
                interfaces: NetworkInterfaces.addresses(), hostName: ProcessInfo.processInfo.hostName, warn: warn)
        }
        if let exec = configuration.settings.wake.exec { logger.info("wake hook: \(exec)") }

        // SIGHUP reads config.json and the gateway token file again; invalid ones keep the running settings.
        let (hangups, hangup) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reload: @Sendable () throws -> BridgeServer.Reloaded = { [self] in
            let settings = try state.settings()
            if let problem = settings.wake.problem("wake") ?? settings.notify.hook.problem("notify") { throw ConfigurationProblem(description: problem) }
            let gateway = try Self.checked { try BridgeConfiguration.gateway(settings, overrides) { logger.warning("\($0)") } }
            return BridgeServer.Reloaded(settings: settings, gatewayToken: gateway?.token)
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

    /// The flags, as `BridgeConfiguration` takes them over config.json.
    private var overrides: BridgeConfiguration.Overrides {
        var o = BridgeConfiguration.Overrides()
        (o.name, o.port, o.listen) = (name, port.value, listen)
        (o.pairingTTL, o.pairingMaxWait, o.noMDNS) = (pairingTTL?.seconds, pairingMaxWait?.seconds, noMDNS)
        (o.pingInterval, o.idleTimeout) = (pingInterval?.seconds, idleTimeout?.seconds)
        (o.gatewayURL, o.gatewayTokenFile, o.allowRemoteGateway, o.gatewayCAFile, o.noGateway) = (gateway, gatewayTokenFile, allowRemoteGateway, gatewayCaFile, noGateway)
        (o.gatewayAuth, o.gatewayProtocol, o.gatewayOwners) = (gatewayAuth, gatewayProtocol, gatewayOwner)
        o.gatewayTokenFromEnvironment = ProcessInfo.processInfo.environment["LANBRIDGE_GATEWAY_TOKEN"]
        (o.metricsListen, o.metricsAllowRemote) = (metricsListen, metricsAllowRemote)
        (o.uiListen, o.uiAllowRemote, o.noUI) = (uiListen, uiAllowRemote, noUi)
        (o.canvasListen, o.noCanvas, o.openClawApps, o.openClawAppsListen) = (canvasListen, noCanvas, openclawApps, openclawAppsListen)
        (o.browser, o.browserListen) = (browser, browserListen)
        return o
    }

    /// A flag given wrong is a usage error (exit 64), the rest a configuration problem (exit 78).
    private static func checked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let problem as BridgeConfiguration.Problem {
            switch problem.kind {
            case .usage: throw ValidationError(problem.description)
            case .configuration: throw ConfigurationProblem(description: problem.description)
            }
        }
    }
}
