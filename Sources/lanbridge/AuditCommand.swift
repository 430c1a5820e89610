import ArgumentParser
import Foundation
import LanbridgeState

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show or verify the audit log of pairing decisions.",
        discussion: "Every pairing request, approval, rejection, expiry, revoke, block and key change is appended to audit.jsonl in the state directory. Each line carries the SHA-256 of the line before it, so an edited or deleted line breaks the chain at the next one.",
        subcommands: [Show.self, Verify.self]
    )

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the audit log.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                try state.directory.requireExisting()
                let entries = try AuditLog(directory: state.directory).entries()
                if json { return try Output.json(entries) }
                guard !entries.isEmpty else { return print("The audit log is empty.") }
                Output.table(["TIME", "EVENT", "ACTOR", "NODE ID", "REQUEST", "DETAIL"], entries.map {
                    [$0.time.formatted(.iso8601), $0.event, $0.actor, $0.nodeId ?? "-", $0.requestId ?? "-", $0.detail ?? ""]
                })
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check the hash chain; exits 1 if the log was tampered with.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                try state.directory.requireExisting()
                let result = try AuditLog(directory: state.directory).verify()
                if json {
                    struct Report: Encodable { let lines: Int; let intact: Bool; let brokenAt: [Int] }
                    try Output.json(Report(lines: result.lines, intact: result.isIntact, brokenAt: result.brokenAt))
                } else if result.isIntact {
                    print("Audit log intact: \(result.lines) entries.")
                } else {
                    print("Audit log TAMPERED: the chain breaks at line \(result.brokenAt.map(String.init).joined(separator: ", ")).")
                }
                if !result.isIntact { throw ExitCode(1) }
            }
        }
    }
}
