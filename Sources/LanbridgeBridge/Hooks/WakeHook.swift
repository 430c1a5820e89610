import FoundationEssentials
import LanbridgeCore
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging

/// Runs the operator's wake hook (`wake.exec`) for a `WakeCall`: the node's push registration is
/// read from its 0600 file and handed over on stdin as one JSON document, with nothing else of the
/// daemon's (never the gateway token); the token is blanked out of the logged output.
final class WakeHook: Sendable {
    private let directory: StateDirectory
    private let logger: Logger
    private let runner: HookRunner

    init(directory: StateDirectory, logger: Logger, metrics: BridgeMetrics) {
        (self.directory, self.logger) = (directory, logger)
        runner = HookRunner(name: "wake hook", logger: logger) { metrics.wake($0) }
    }

    /// Starts a run on its own thread; returns at once.
    func run(_ call: WakeCall) {
        guard call.hook.exec != nil else { return }
        runner.start(["node": "\(call.node)"]) { [self] in execute(call) }
    }

    /// The document on the hook's stdin (PROTOCOL.md §12.3): absent push fields are null.
    static func document(_ call: WakeCall, push: PushRegistration?) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return [
            "version": 1, "nodeId": .string(call.node.description), "displayName": .string(call.displayName), "platform": .string(call.platform),
            "command": .string(call.command), "why": .string(call.why), "holdMs": .number(Double(call.holdMs)),
            "provider": text(push?.provider), "token": text(push?.token), "environment": text(push?.environment), "topic": text(push?.topic),
        ]
    }

    private func execute(_ call: WakeCall) {
        var meta: Logger.Metadata = ["node": "\(call.node)", "command": "\(call.command)", "why": "\(call.why)"]
        let push: PushRegistration?
        do { push = try PushTokens(directory: directory).record(for: call.node)?.registration } catch {
            logger.error("wake hook: cannot read \(PushTokens.fileName): \(error)", metadata: meta)
            push = nil
        }
        meta["provider"] = "\(push?.provider ?? "none")"
        runner.execute(call.hook, input: Self.document(call, push: push).serialized, hiding: push?.token, meta: meta, since: call.heldAt)
    }
}
