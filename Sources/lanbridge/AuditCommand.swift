import ArgumentParser
import FoundationEssentials
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeBridge
import LanbridgeState
import LanbridgeStores

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show or verify the audit log of pairing decisions.",
        discussion:
            "Every pairing request, approval, rejection, expiry, revoke, block and key change is appended to audit.jsonl in the state directory. Each line carries the SHA-256 of the line before it, so an edited or deleted line breaks the chain at the next one.",
        subcommands: [Show.self, Verify.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the audit log.",
            discussion: "--follow keeps printing entries as they are appended (one line each; one JSON object per line with --json), like tail -f.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false
        @Flag(help: "Keep printing new entries as they are appended (Ctrl-C to stop).") var follow = false

        func run() async throws {
            var shown = 0
            try Output.run {
                try state.directory.requireExisting()
                let entries = try AuditLog(directory: state.directory).entries()
                shown = entries.count
                if follow { return emit(entries) }
                if json { return try Output.json(entries) }
                guard !entries.isEmpty else { return print("The audit log is empty.") }
                Output.table(
                    ["TIME", "EVENT", "ACTOR", "NODE ID", "REQUEST", "DETAIL"],
                    entries.map {
                        [ISO8601Text.string($0.time), $0.event, $0.actor, $0.nodeId ?? "-", $0.requestId ?? "-", $0.detail ?? ""]
                    })
            }
            guard follow else { return }
            let watcher = try StoreWatcher(directory: state.directory.url, files: [AuditLog.fileName])
            defer { watcher.stop() }
            for await _ in watcher.changes() {
                let entries = (try? AuditLog(directory: state.directory).entries()) ?? []
                if entries.count > shown { emit(Array(entries[shown...])) }
                shown = max(shown, entries.count)
            }
        }

        /// One line per entry, written at once (a pipe must not hold it back).
        private func emit(_ entries: [AuditEntry]) {
            for entry in entries {
                let line =
                    json
                    ? String(decoding: (try? LanbridgeJSON.compact.encode(entry)) ?? Data(), as: UTF8.self)
                    : [ISO8601Text.string(entry.time), entry.event, entry.actor, entry.nodeId ?? "-", entry.requestId ?? "-", entry.detail ?? ""].joined(separator: "  ")
                StandardStream.writeLine(line, toError: false)
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the log: the hash chain, its anchored head, and that it explains every paired node; exits 1 if not.",
            discussion: """
                Finds: a line changed, inserted or removed anywhere (the chain breaks at the next line); lines cut off the end (audit.head records the count and the last line's hash); a paired node with no approval or invite redemption in the log.

                Cannot find: the log and audit.head rewritten together by someone who can write the state directory (the chain has no secret; keep a copy of audit.head elsewhere for that). Lines past the head (a crash between an append and the head's update, or another writer) are reported, not failed.
                """)
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                try state.directory.requireExisting()
                let store = PairingStore(directory: state.directory)
                let paired = try store.read().paired.nodes  // also completes an interrupted change
                let log = AuditLog(directory: state.directory)
                let result = try log.verify()
                let entries = (try? log.entries()) ?? []
                let unexplained = AuditLog.unexplained(paired, entries: entries)
                let intact = result.isIntact && unexplained.isEmpty
                if json {
                    struct Report: Encodable {
                        let lines: Int; let intact: Bool; let brokenAt: [Int]; let truncated: String?; let unanchored: Int; let tornTail: Bool
                        let unexplainedNodes: [String]
                    }
                    try Output.json(
                        Report(
                            lines: result.lines, intact: intact, brokenAt: result.brokenAt, truncated: result.truncated,
                            unanchored: result.unanchored, tornTail: result.tornTail, unexplainedNodes: unexplained))
                } else {
                    if !result.brokenAt.isEmpty { print("Audit log TAMPERED: the chain breaks at line \(result.brokenAt.map(String.init).joined(separator: ", ")).") }
                    if let truncated = result.truncated { print("Audit log TRUNCATED: \(truncated).") }
                    if !unexplained.isEmpty { print("Audit log INCOMPLETE: no approval recorded for paired node(s) \(unexplained.joined(separator: ", ")).") }
                    if result.unanchored > 0 { print("note: \(result.unanchored) line(s) after the anchored head (a crash, or another writer).") }
                    if result.tornTail {
                        print("note: the last line is torn, a write cut short (a full disk, or a crash); not tampering. The next append cuts it off.")
                    }
                    if intact { print("Audit log intact: \(result.lines) entries, every paired node explained.") }
                }
                if !intact { throw ExitCode(1) }
            }
        }
    }
}
