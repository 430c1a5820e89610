import ArgumentParser
import FoundationEssentials
import Glibc
import LanbridgeBridge
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `lanbridge activity`: what the agent did with each device, from the running daemon's feed.
struct ActivityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity",
        abstract: "What the agent did with each device: every invoke, who asked, and how it ended.",
        discussion: """
            The running daemon keeps the last \(Limit.activityRecords.spec.defaultValue ?? 0) invokes in memory (limits.activityRecords): the time, the node, the command, who asked (the gateway, an operator's CLI, or OpenClaw's gateway on a node's own socket), the outcome (ok or the error code the asker heard), the duration and the result's size. Never the params or the payload. A restart starts it empty.

              $ lanbridge activity                          # the last 50
              $ lanbridge activity --node "Ada's phone" --command 'camera.*' --follow
              $ lanbridge activity --counts                 # per node: the last hour and day

            Exit codes: 0, 69 the daemon is not running.
            """)
    @OptionGroup var state: StateOptions
    @Option(help: ArgumentHelp("Only this node (its ID or name).", valueName: "node")) var node: String?
    @Option(help: ArgumentHelp("Only commands this pattern matches (camera.*).", valueName: "pattern")) var command: String?
    @Option(help: "How many of the newest to show (at most 1000).") var limit = 50
    @Flag(help: "Keep printing new records as they come (Ctrl-C to stop).") var follow = false
    @Flag(help: "Print JSON (with --follow, one record per line).") var json = false
    @Flag(help: "Per node instead: how many invokes in the last hour and day, and how many of those did not end ok.") var counts = false

    func validate() throws {
        if counts, follow || node != nil || command != nil { throw ValidationError("--counts takes no --follow, --node or --command") }
    }

    private func showCounts() throws {
        let answer = try ControlClient.ask(state.directory, .activityCounts, notRunning: "the daemon is not running: the activity feed lives in it (lanbridge serve)")
        let nodes = try (answer["nodes"] ?? .array([])).decoded(as: [ActivityFeed.Counts].self)
        if json { return try Output.json(nodes) }
        guard !nodes.isEmpty else { return print("No invokes in the last day.") }
        Output.table(["NODE", "LAST HOUR", "LAST DAY", "NOT OK"], nodes.map { [$0.name ?? $0.nodeId, "\($0.lastHour)", "\($0.lastDay)", "\($0.notOkLastDay)"] })
        if answer["coversDay"] == false { Output.note("(the feed holds fewer than a day of invokes: limits.activityRecords)") }
    }

    /// `--follow --json`: one record a line, dates as the rest of the CLI writes them.
    private var lineEncoder: JSONEncoder { LanbridgeJSON.compact }

    func run() throws {
        try Output.run {
            if counts { return try showCounts() }
            var since = 0
            var first = true
            while true {
                var params: [String: JSONValue] = ["since": .number(Double(since)), "limit": .number(Double(first ? limit : 1000))]
                if let node { params["node"] = .string(node) }
                if let command { params["command"] = .string(command) }
                let answer = try ControlClient.ask(
                    state.directory, .activityList, params, notRunning: "the daemon is not running: the activity feed lives in it (lanbridge serve)")
                let records = try (answer["records"] ?? .array([])).decoded(as: [ActivityFeed.Record].self)
                since = max(since, Int(answer["next"]?.numberValue ?? 0))
                if json {
                    if follow {
                        let encoder = lineEncoder
                        for record in records { print(String(decoding: try encoder.encode(record), as: UTF8.self)) }
                    } else {
                        try Output.json(records)
                    }
                } else {
                    let rows = records.map {
                        [ISO8601Text.string($0.time), $0.name ?? $0.nodeId ?? "-", $0.command, $0.asker, $0.outcome, "\($0.durationMs)", "\($0.resultBytes)", $0.note ?? ""]
                    }
                    if first {
                        if answer["capacity"] == .number(0) {
                            print("The activity feed is off (limits.activityRecords: 0).")
                            return
                        } else if records.isEmpty {
                            print(follow ? "No invokes yet; waiting for some." : "No invokes yet.")
                        } else {
                            Output.table(["TIME", "NODE", "COMMAND", "ASKED BY", "OUTCOME", "MS", "BYTES", "WHY"], rows)
                        }
                    } else {
                        // Names and commands are the peer's: escaped, as the table escapes them.
                        for row in rows { print(row.map(SafeText.escape).joined(separator: "  ")) }
                    }
                }
                first = false
                guard follow else { return }
                fflush(nil)
                usleep(500_000)
            }
        }
    }
}
