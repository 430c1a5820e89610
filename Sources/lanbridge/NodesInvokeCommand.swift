import ArgumentParser
import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

extension NodesCommand {
    struct Invoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a command on a connected node, through the running daemon.",
            discussion: """
                The invoke goes through the daemon's control socket (control.sock in the state directory, owner only) and meets exactly the checks a gateway's would: access rules, declared commands, foreground, rate limits, size limits.

                  $ lanbridge nodes invoke --node Pixel-7 --command system.info
                  $ lanbridge nodes invoke --node Pixel-7 --command canvas.navigate --params '{"url":"https://example.com"}'
                  $ lanbridge nodes invoke --node Pixel-7 --command canvas.snapshot --out snap.png
                  $ lanbridge nodes invoke --node Pixel-7 --command camera.snap --hold 2m --out photo.jpg

                With --hold, a node that is away or in the background (for a command that needs the foreground) is waited for, up to that long, instead of refused at once: the command runs when the node is back, and the config's wake hook (if any) is run to bring it back. Interrupting the command drops the held invoke.

                With --out, a result carrying base64 data (a snapshot) is written to the file, and the printed result says where.

                Exit codes: 0 done; 1 refused or failed (FORBIDDEN, NODE_NOT_FOUND, COMMAND_FAILED, PAYLOAD_TOO_LARGE); 69 the daemon is not running; 75 try again later (NODE_NOT_CONNECTED, NODE_BACKGROUND_UNAVAILABLE, RATE_LIMITED, TIMEOUT, UNAVAILABLE).
                """)
        @OptionGroup var state: StateOptions
        @Option(help: "Node ID or display name.") var node: String
        @Option(help: "Command, e.g. canvas.snapshot.") var command: String
        @Option(help: ArgumentHelp("Parameters as a JSON object.", valueName: "json")) var params: String?
        @Option(help: ArgumentHelp("How long the node may take: 500ms, 30s, 5m (at most the bridge's maxTimeoutMs).", valueName: "duration")) var timeout: Duration?
        @Option(help: ArgumentHelp("Wait this long for a node that is away or in the background: 30s, 5m (at most the bridge's maxHoldMs).", valueName: "duration")) var hold:
            Duration?
        @Option(help: ArgumentHelp("Write the result's base64 data (a PNG snapshot) to this file.", valueName: "file")) var out: String?
        @Flag(help: "Print the whole answer as JSON (errors too).") var json = false

        func validate() throws {
            if let params, case .object? = try? LanbridgeJSON.decoder.decode(JSONValue.self, from: Data(params.utf8)) {
            } else if params != nil {
                throw ValidationError("--params must be a JSON object, e.g. '{\"url\":\"https://example.com\"}'")
            }
        }

        func run() throws {
            try Output.run {
                let parsed = try params.map { try LanbridgeJSON.decoder.decode(JSONValue.self, from: Data($0.utf8)) }
                var request: [String: JSONValue] = [
                    "nodeId": .string(node), "command": .string(command),
                    "idempotencyKey": .string(Hex.encode(SecureRandom.bytes(12))),
                ]
                if let parsed { request["params"] = parsed }
                if let timeout { request["timeoutMs"] = .number(Double(timeout.milliseconds)) }
                if let hold { request["hold"] = ["maxMs": .number(Double(hold.milliseconds))] }
                let answer = try ControlClient.answer(
                    state.directory, .nodeInvoke, request, timeout: (hold?.seconds ?? 0) + (timeout?.seconds ?? 300) + 5)
                switch answer {
                case let .success(payload):
                    let shown = try out.map { try writeData(from: payload, to: $0) } ?? payload
                    if json { try Output.json(["ok": .bool(true), "payload": shown ?? .null] as JSONValue) } else { try Output.json(shown ?? .null) }
                case let .failure(error):
                    if json { try Output.json(["ok": .bool(false), "error": try JSONValue(encoding: error)] as JSONValue) }
                    // The reason, where there is one, names which refusal it was (ASKED_DENIED, NOT_ALLOWLISTED, …).
                    let reason = error.details?["reason"]?.stringValue.map { " (\(SafeText.escape($0)))" } ?? ""
                    // A node's error reaches the terminal escaped: its message is the node's to choose.
                    Output.note(
                        "lanbridge: \(SafeText.escape(error.code))\(reason): \(SafeText.escape(error.message))" + (error.retryAfterMs.map { " (retry after \($0) ms)" } ?? ""))
                    let tryAgain = [
                        ErrorMessage.nodeNotConnected, ErrorMessage.backgroundUnavailable, ErrorMessage.rateLimited,
                        ErrorMessage.timeout, ErrorMessage.unavailable,
                    ]
                    throw ExitCode(tryAgain.contains(error.code) ? 75 : 1)
                }
            }
        }

        /// Writes `payload.base64` to `path` and returns the payload with the data replaced by where it went.
        private func writeData(from payload: JSONValue?, to path: String) throws -> JSONValue? {
            guard case var .object(fields)? = payload, let text = fields["base64"]?.stringValue, let data = Data(base64Encoded: text) else {
                throw RuleRefused(description: "the result has no base64 data to write to \(path)")
            }
            try data.write(to: URL(fileURLWithPath: path))
            fields["base64"] = nil
            fields["writtenTo"] = .string(path)
            fields["bytes"] = .number(Double(data.count))
            return .object(fields)
        }
    }
}
