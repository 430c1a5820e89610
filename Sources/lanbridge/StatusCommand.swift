import ArgumentParser
import Foundation
import LanbridgeProtocol
import LanbridgeState

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "One screen: is the daemon up, where it listens, mDNS, the gateway link, and the nodes.",
        discussion: "Exits 0 when the daemon runs, 69 when it does not (the rest is still shown from the files). `lanbridge doctor` says what to fix.")

    @OptionGroup var state: StateOptions
    @Flag(help: "Print JSON.") var json = false

    struct Report: Encodable {
        let running: Bool
        let pid: Int32?
        let bridgeName: String?
        let listening: [String]
        let mdns: String?
        let mdnsName: String?
        let gateway: String?
        let startedAt: Date?
        let nodes: Nodes
        struct Nodes: Encodable { let paired, connected, foreground, pending, blocked, invites: Int }
        /// With the OpenClaw gateway protocol: each connected node's socket there.
        let gatewaySessions: [GatewaySession]
        struct GatewaySession: Encodable {
            let nodeId, deviceId, session: String
            /// What the gateway holds for its own operator's approval, if anything.
            let approval: RuntimeStatus.GatewayApproval?
        }
    }

    func run() throws {
        try Output.run {
            let current = try PairingStore(directory: state.directory).read()
            let runtime = RuntimeStatusFile(directory: state.directory).read()
            let paired = Set(current.paired.nodes.map(\.nodeId.description))
            let live = runtime?.nodes.filter { paired.contains($0.key) }.map(\.value) ?? []
            let now = Date()
            let report = Report(
                running: runtime != nil, pid: runtime?.pid, bridgeName: runtime?.bridgeName, listening: runtime?.listening ?? [],
                mdns: runtime?.mdns, mdnsName: runtime?.mdnsName, gateway: runtime?.gateway, startedAt: runtime?.startedAt,
                nodes: .init(paired: current.paired.nodes.count, connected: live.count, foreground: live.filter(\.foreground).count,
                             pending: current.pending.requests.filter { $0.expiresAt > now }.count, blocked: current.paired.blocked.count,
                             invites: current.invites.invites.filter { $0.expiresAt > now }.count),
                gatewaySessions: (runtime?.nodes ?? [:]).filter { paired.contains($0.key) }.sorted { $0.key < $1.key }.compactMap { id, node in
                    node.gatewayDeviceId.map { Report.GatewaySession(nodeId: id, deviceId: $0, session: node.gatewaySession ?? "unknown", approval: node.gatewayApproval) }
                })
            if json {
                try Output.json(report)
            } else if let runtime {
                print("lanbridge serve is running (pid \(runtime.pid)) as \"\(runtime.bridgeName)\" since \(runtime.startedAt.formatted(.iso8601))")
                print("  listening:  \(runtime.listening.joined(separator: ", "))")
                print("  mDNS:       \(runtime.mdns ?? "unknown")\(runtime.mdnsName.map { " as \"\($0)\"" } ?? "")")
                print("  gateway:    \(runtime.gateway ?? "unknown")")
            } else {
                print("lanbridge serve is not running (state in \(state.directory.url.path))")
            }
            if !json {
                let n = report.nodes
                print("  nodes:      \(n.connected) connected (\(n.foreground) in the foreground) of \(n.paired) paired; \(n.pending) pending, \(n.blocked) blocked, \(n.invites) live invites")
                for session in report.gatewaySessions {
                    print("  at gateway: \(session.nodeId) as \(session.deviceId.prefix(16))…: \(session.session)")
                }
            }
            if runtime == nil { throw ExitCode(69) }
        }
    }
}
