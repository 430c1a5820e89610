import ArgumentParser
import Foundation
import LanbridgeProtocol
import LanbridgeState

struct NodesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "Approve, list and revoke devices; edit what they may run; invoke commands.",
        discussion: """
        A typical approval, over SSH if need be:

          $ lanbridge nodes pending
          $ lanbridge nodes approve k3f9q2xm --code 048213   # the code the device shows

        These commands edit the state files directly, under a lock shared with the daemon, so they work whether or not `lanbridge serve` is running; a running daemon acts on the change at once.
        """,
        subcommands: [Pending.self, Approve.self, Reject.self, List.self, Describe.self, Allow.self, Deny.self, Invoke.self, Revoke.self]
    )

    struct Pending: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show pairing requests waiting for approval.",
                                                        discussion: "KEY CHANGED marks a request that looks like an already-paired device (same name or model) under a new key: check with the device's owner before approving.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        struct Row: Encodable {
            let requestId, nodeId, displayName, platform: String
            let sourceAddress: String?
            let code: String?
            let createdAt, expiresAt: Date
            let ageSeconds, secondsLeft: Int
            let keyChanged: Bool
            let keyChangedFrom: String?
        }

        func run() throws {
            try Output.run {
                let now = Date()
                let current = try PairingStore(directory: state.directory).read()
                let rows = current.pending.requests.filter { $0.expiresAt > now }.map { r in
                    let previous = current.keyChange(for: r)
                    return Row(requestId: r.requestId, nodeId: r.nodeId.description, displayName: r.details.displayName,
                               platform: r.details.platform, sourceAddress: r.sourceAddress, code: r.code,
                               createdAt: r.createdAt, expiresAt: r.expiresAt, ageSeconds: Int(now.timeIntervalSince(r.createdAt)),
                               secondsLeft: Int(r.expiresAt.timeIntervalSince(now)), keyChanged: previous != nil,
                               keyChangedFrom: previous?.nodeId.description)
                }
                if json { return try Output.json(rows) }
                guard !rows.isEmpty else { return print("No pending pairing requests.") }
                Output.table(["REQUEST", "NODE ID", "NAME", "PLATFORM", "FROM", "AGE", "LEFT", "CODE", ""], rows.map {
                    [$0.requestId, $0.nodeId, $0.displayName, $0.platform, $0.sourceAddress ?? "-", Output.duration(Double($0.ageSeconds)),
                     Output.duration(Double($0.secondsLeft)), $0.code ?? "(waiting)", $0.keyChanged ? "KEY CHANGED" : ""]
                })
            }
        }
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve a pairing request.",
                                                        discussion: "With --code, the approval goes through only if the device shows the same code: this is what defeats a man in the middle. The node is told on its open connection.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The request ID from `lanbridge nodes pending`.") var requestId: String
        @Option(help: "The 6-digit code the device shows; must match.") var code: String?
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let settings = try state.settings()
                let node = try PairingStore(directory: state.directory).update { state in
                    let platform = state.request(requestId)?.details.platform ?? ""
                    return try state.approve(requestId: requestId, code: code, access: settings.defaultRules(forPlatform: platform), now: Date())
                }
                if json { return try Output.json(node) }
                print("Approved \(node.details.displayName) (\(node.nodeId)).")
                print("Allowed commands: \(node.access.allow.isEmpty ? "none" : node.access.allow.joined(separator: ", "))")
            }
        }
    }

    struct Reject: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reject a pairing request.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The request ID from `lanbridge nodes pending`.") var requestId: String
        @Flag(help: "Also ignore this device's key from now on.") var block = false

        func run() throws {
            try Output.run {
                let request = try PairingStore(directory: state.directory).update { try $0.reject(requestId: requestId, block: block, now: Date()) }
                print("Rejected \(request.details.displayName) (\(request.nodeId))\(block ? " and blocked its key" : "").")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show paired devices.",
                                                        discussion: "Connection and foreground state come from the running daemon; without one every node shows as disconnected.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        struct Row: Encodable {
            let nodeId, displayName, platform: String
            let connected: Bool
            let foreground: Bool?
            let address: String?
            let lastSeen: Date
            let allow: [String]
            let deny: [String]
        }

        func run() throws {
            try Output.run {
                let current = try PairingStore(directory: state.directory).read()
                let runtime = RuntimeStatusFile(directory: state.directory).read()
                let rows = current.paired.nodes.map { node in
                    let live = runtime?.nodes[node.nodeId.description]
                    return Row(nodeId: node.nodeId.description, displayName: node.details.displayName, platform: node.details.platform,
                               connected: live != nil, foreground: live?.foreground, address: live?.address,
                               lastSeen: live == nil ? node.lastSeen : Date(), allow: node.access.allow, deny: node.access.deny)
                }
                if json { return try Output.json(rows) }
                guard !rows.isEmpty else { return print("No paired nodes. Pair one with `lanbridge nodes pending` or `lanbridge invite`.") }
                if runtime == nil { Output.note("(the daemon is not running: connection state unknown)") }
                Output.table(["NODE ID", "NAME", "PLATFORM", "STATE", "LAST SEEN", "ALLOWED"], rows.map {
                    [$0.nodeId, $0.displayName, $0.platform,
                     $0.connected ? ($0.foreground == false ? "connected, background" : "connected") : "offline",
                     $0.connected ? "now" : Output.duration(Date().timeIntervalSince($0.lastSeen)) + " ago",
                     $0.allow.isEmpty ? "-" : $0.allow.joined(separator: ",")]
                })
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a pairing; a connected device is dropped at once.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The node ID from `lanbridge nodes list`.") var nodeId: String

        func run() throws {
            try Output.run {
                let node = try PairingStore(directory: state.directory).update { try $0.revoke(nodeId: nodeId) }
                print("Revoked \(node.details.displayName) (\(node.nodeId)).")
            }
        }
    }
}
