import ArgumentParser
import FoundationEssentials
import Glibc
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `lanbridge invokes pending|approve|deny`: the invokes an ask rule holds for the operator
/// (`nodes ask`), answered through the running daemon's control socket.
struct InvokesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invokes",
        abstract: "Answer the invokes that wait for you: those an ask rule matched (nodes ask).",
        discussion: """
            An invoke a node's ask rule matches waits at the bridge until you answer it (or \(NumberText.duration(seconds: Double(Limit.askTimeoutMs.spec.defaultValue ?? 0) / 1000)), limits.askTimeoutMs; then the gateway hears FORBIDDEN, ASK_TIMEOUT). Deny wins over ask, and ask over allow.

              $ lanbridge nodes ask "Ada's phone" camera.snap      # ask before each photo
              $ lanbridge invokes pending                          # what waits, with its ID
              $ lanbridge invokes approve 3f9a0c1d2e               # run it, once
              $ lanbridge invokes approve 3f9a0c1d2e --for 10m     # and the same command on that node for 10 minutes
              $ lanbridge invokes approve 3f9a0c1d2e --always      # and turn the ask rule into an allow rule
              $ lanbridge invokes deny 3f9a0c1d2e                  # the gateway hears FORBIDDEN, ASKED_DENIED

            The prompt shows the params' shape (their keys and kinds), never their values. Every answer is in the audit log, with your uid. Exit codes: 0, 1 no invoke waits by that ID (answered, expired, or mistyped), 69 the daemon is not running.
            """,
        subcommands: [Pending.self, Approve.self, Deny.self])

    /// What waits now, from the running daemon (exit 69 without one).
    static func waiting(_ state: StateOptions) throws -> [AskedInvokes.Prompt] {
        try AskedInvokes.Prompt.list(ControlClient.ask(state.directory, .askList, notRunning: "the daemon is not running: nothing waits (lanbridge serve)"))
    }

    struct Pending: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the invokes waiting for your answer.")
        @OptionGroup var state: StateOptions
        @Flag(help: "Keep showing them as they change (Ctrl-C to stop).") var watch = false
        @Flag(help: "Print JSON (with --watch, one list per line).") var json = false

        func run() throws {
            try Output.run {
                var shown: [String]?
                while true {
                    let asks = try InvokesCommand.waiting(state)
                    let ids = asks.map(\.id)
                    if ids != shown {
                        if json {
                            watch ? print(String(decoding: try LanbridgeJSON.compact.encode(asks), as: UTF8.self)) : try Output.json(asks)
                        } else if asks.isEmpty {
                            print("Nothing waits for your answer.")
                        } else {
                            Output.table(
                                ["ID", "NODE", "COMMAND", "ASK RULE", "ASKED BY", "ASKED AT", "EXPIRES IN", "PARAMS"],
                                asks.map {
                                    [$0.id, $0.name.isEmpty ? $0.nodeId : $0.name, $0.command, $0.askRule, $0.asker, $0.askedAt, "\($0.expiresInMs / 1000)s", $0.params]
                                })
                        }
                        shown = ids
                    }
                    guard watch else { return }
                    fflush(nil)
                    usleep(500_000)
                }
            }
        }
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let one waiting invoke run (and, with --for or --always, the next ones).")
        @OptionGroup var state: StateOptions
        @Argument(help: "The ID from `lanbridge invokes pending`.") var id: String
        @Option(help: ArgumentHelp("Also run this command on this node without asking, for this long: 90s, 10m, 2h.", valueName: "duration"))
        var `for`: Duration?
        @Flag(help: "Also turn the ask rule that matched into an allow rule (audited), so it is never asked again.") var always = false
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if `for` != nil, always { throw ValidationError("--for and --always: one or the other") }
        }

        func run() throws {
            try Output.run {
                if always {
                    // The rule first, in paired.json (audited as a change of access); then the answer.
                    let asks = try InvokesCommand.waiting(state)
                    guard let ask = asks.first(where: { $0.id == id }) else { throw NothingWaits(id: id) }
                    _ = try PairingStore(directory: state.directory).update { try $0.askToAllow(ask.askRule, node: ask.nodeId) }
                    try DaemonConfirmation.confirm(state, "the allow rule \(ask.askRule) in place of the ask rule")
                }
                var params: [String: JSONValue] = ["id": .string(id), "approve": true]
                if let duration = `for` { params["forMs"] = .number(Double(duration.milliseconds)) }
                if always { params["always"] = true }
                try answer(state, params, json: json)
            }
        }
    }

    struct Deny: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refuse one waiting invoke: the asker hears FORBIDDEN, ASKED_DENIED.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The ID from `lanbridge invokes pending`.") var id: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run { try answer(state, ["id": .string(id), "approve": false], json: json) }
        }
    }

    struct NothingWaits: Error, CustomStringConvertible {
        let id: String
        var description: String { "no invoke waits for an answer as \(SafeText.escape(id)): it was answered, it expired, or the ID is wrong (lanbridge invokes pending)" }
    }
}

private func answer(_ state: StateOptions, _ params: [String: JSONValue], json: Bool) throws {
    switch try ControlClient.answer(state.directory, .askAnswer, params, notRunning: "the daemon is not running: nothing waits (lanbridge serve)") {
    case let .success(value):
        if json { return try Output.json(value ?? .null) }
        let how = value?["answered"]?.stringValue ?? "answered"
        print(SafeText.escape("\(how.prefix(1).uppercased() + how.dropFirst()): \(value?["command"]?.stringValue ?? "") on \(value?["nodeId"]?.stringValue ?? "")."))
    case let .failure(error) where error.details?["reason"] == "UNKNOWN_ASK":
        throw InvokesCommand.NothingWaits(id: params["id"]?.stringValue ?? "")
    case let .failure(error):
        Output.note("lanbridge: \(error.message)")
        throw ExitCode(1)
    }
}
