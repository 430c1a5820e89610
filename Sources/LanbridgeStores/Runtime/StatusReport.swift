import FoundationEssentials
import Glibc
import LanbridgeFiles
import LanbridgeState

/// What `lanbridge status` says, from the files alone (runtime.json and the store): the CLI prints
/// it, the console renders it.
public struct StatusReport: Encodable, Sendable {
    public let running: Bool
    public let pid: Int32?
    public let bridgeName: String?
    public let listening: [String]
    /// Where devices should dial, best first (what invites and `welcome` list).
    public let reachable: [String]
    /// The approval console's address (`lanbridge ui` logs in), when it is on.
    public let console: String?
    /// The canvas relay, when it is on: where, its certificate's SHA-256, and its canvas host.
    public let canvas: RuntimeStatus.Canvas?
    /// Where OpenClaw's own apps connect, when that door is open.
    public let openClawApps: [String]?
    public let openClawAppsTlsSha256: String?
    /// The browser door's pages, when it is on.
    public let browser: [String]?
    public let mdns: String?
    public let mdnsName: String?
    public let gateway: String?
    /// Why the pairing store cannot be written now, if it cannot: as the running daemon last said
    /// ("read-only file system since …"), else as the directory shows it now.
    public let state: String?
    public let startedAt: Date?
    public let nodes: Nodes
    public struct Nodes: Encodable, Sendable { public let paired, connected, foreground, pending, blocked, invites: Int }
    /// With the OpenClaw gateway protocol: each connected node's socket there.
    public let gatewaySessions: [GatewaySession]
    public struct GatewaySession: Encodable, Sendable {
        public let nodeId, deviceId, session: String
        /// What the gateway holds for its own operator's approval, if anything.
        public let approval: RuntimeStatus.GatewayApproval?
    }

    public static func read(_ directory: StateDirectory, now: Date = Date()) throws -> StatusReport {
        let current = try PairingStore(directory: directory).read()
        let runtime = RuntimeStatusFile(directory: directory).read()
        let paired = Set(current.paired.nodes.map(\.nodeId.description))
        let live = runtime?.nodes.filter { paired.contains($0.key) }.map(\.value) ?? []
        return StatusReport(
            running: runtime != nil, pid: runtime?.pid, bridgeName: runtime?.bridgeName, listening: runtime?.listening ?? [],
            reachable: runtime?.reachable ?? [], console: runtime?.console, canvas: runtime?.canvas, openClawApps: runtime?.openClawApps,
            openClawAppsTlsSha256: runtime?.openClawAppsTlsSha256, browser: runtime?.browser, mdns: runtime?.mdns, mdnsName: runtime?.mdnsName, gateway: runtime?.gateway,
            state: runtime?.stateProblem ?? (directory.isMountedReadOnly ? StoreError.unwritable(errno: EROFS) : nil), startedAt: runtime?.startedAt,
            nodes: .init(
                paired: current.paired.nodes.count, connected: live.count, foreground: live.filter(\.foreground).count,
                pending: current.pending.requests.filter { $0.expiresAt > now }.count, blocked: current.paired.blocked.count,
                invites: current.invites.invites.filter { $0.isOpen(at: now) }.count),
            gatewaySessions: (runtime?.nodes ?? [:]).filter { paired.contains($0.key) }.sorted { $0.key < $1.key }.compactMap { id, node in
                node.gatewayDeviceId.map { GatewaySession(nodeId: id, deviceId: $0, session: node.gatewaySession ?? "unknown", approval: node.gatewayApproval) }
            })
    }
}
