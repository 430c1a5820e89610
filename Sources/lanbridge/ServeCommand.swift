import ArgumentParser
import Dispatch
import Foundation
import LanbridgeBridge
import LanbridgeNet
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the bridge daemon.",
        discussion: """
        Listens for nodes, runs the Noise handshake on every connection, and lets unpaired nodes do nothing but ask to pair. Pairing requests wait for `lanbridge nodes approve`. Stops cleanly on SIGTERM or SIGINT.

        Logs go to stderr: aligned on a terminal, one key=value line per event otherwise (journald).
        """
    )

    @OptionGroup var state: StateOptions
    @Option(help: "TCP port to listen on.") var port = BridgeConfiguration.defaultPort
    @Option(help: ArgumentHelp("Where to listen: lan (all interfaces), loopback, or one address such as a tailnet IP.", valueName: "lan|loopback|address"))
    var bind = "lan"
    @Option(help: "Display name nodes see. Default: the host name.") var name: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel = "info"
    @Option(help: "How long a pairing request waits after the device's last sign of life: 90s, 5m.") var pairingTTL = Duration(argument: "5m")!
    @Option(help: "The longest a connected device's pairing request can wait.") var pairingMaxWait = Duration(argument: "15m")!
    @Flag(name: .customLong("no-mdns"), help: "Do not advertise on mDNS (nodes then need the address).") var noMDNS = false
    @Option(help: "Ping every connection this often.") var pingInterval = Duration(argument: "15s")!
    @Option(help: "Drop a connection silent for this long (finds half-open connections).") var idleTimeout = Duration(argument: "40s")!

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown log level \(logLevel)") }
        let logger = Logger(label: "lanbridge") { LineLogHandler(label: $0, level: level) }
        var configuration = BridgeConfiguration(stateDirectory: state.directory, name: name ?? ProcessInfo.processInfo.hostName)
        configuration.port = port
        configuration.bind = .init(bind)
        configuration.pairingTiming.timeToLive = pairingTTL.seconds
        configuration.pairingTiming.hardCap = max(pairingMaxWait.seconds, pairingTTL.seconds)
        configuration.mdns = !noMDNS
        configuration.pingInterval = pingInterval.seconds
        configuration.idleTimeout = idleTimeout.seconds

        let server = Task { try await BridgeServer.run(configuration: configuration, logger: logger) }
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { server.cancel() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        try await Output.runAsync { try await server.value }
    }
}
