import ArgumentParser
import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "One screen: is the daemon up, where it listens, mDNS, the gateway link, and the nodes.",
        discussion: "Exits 0 when the daemon runs, 69 when it does not (the rest is still shown from the files). `lanbridge doctor` says what to fix.")

    @OptionGroup var state: StateOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try Output.run {
            let report = try StatusReport.read(state.directory)
            if json {
                try Output.json(report)
            } else if report.running, let pid = report.pid, let name = report.bridgeName, let since = report.startedAt {
                print("lanbridge serve is running (pid \(pid)) as \"\(name)\" since \(ISO8601Text.string(since))")
                print("  listening:  \(report.listening.joined(separator: ", "))")
                if !report.reachable.isEmpty { print("  reachable:  \(report.reachable.joined(separator: ", "))") }
                if let console = report.console { print("  console:    \(console)/ (log in with `lanbridge ui`)") }
                if let canvas = report.canvas {
                    print("  canvas:     https://\(canvas.listening.joined(separator: ", https://")) for paired nodes, from \(canvas.upstream)")
                    print("              certificate sha256 \(canvas.tlsSha256)")
                }
                if let apps = report.openClawApps, !apps.isEmpty {
                    print("  OpenClaw's apps: \(apps.joined(separator: ", ")) (they show the certificate's sha256 before trusting it)")
                    if let sha256 = report.openClawAppsTlsSha256 { print("              certificate sha256 \(sha256)") }
                }
                if let pages = report.browser, !pages.isEmpty {
                    print("  browsers:   \(pages.joined(separator: ", ")) (a page that makes a browser a node; lanbridge doctor says how phones can trust it)")
                }
                print("  mDNS:       \(report.mdns ?? "unknown")\(report.mdnsName.map { " as \"\($0)\"" } ?? "")")
                print("  gateway:    \(report.gateway ?? "unknown")")
            } else {
                print("lanbridge serve is not running (state in \(state.directory.url.path))")
            }
            if !json, let problem = report.state {
                print("  state:      \(problem): paired nodes keep working; pairing and approvals fail until it takes writes")
            }
            if !json {
                let n = report.nodes
                print(
                    "  nodes:      \(n.connected) connected (\(n.foreground) in the foreground) of \(n.paired) paired; \(n.pending) pending, \(n.blocked) blocked, \(n.invites) live invites"
                )
                for session in report.gatewaySessions {
                    print("  at gateway: \(session.nodeId) as \(session.deviceId.prefix(16))…: \(session.session)")
                }
            }
            if !report.running { throw ExitCode(69) }
        }
    }
}
