import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Logging

/// Runs the operator's notify hook (`notify.exec`) when an invoke starts waiting for their answer,
/// so it can reach them (ntfy, a desktop notification, a phone). The document holds the prompt as
/// `lanbridge invokes pending` shows it (the params' shape, never their values) and, when the
/// console is on and `notify.consoleUid` names its user, a one-time login link to the prompt:
/// loopback only, redeemable once, within a minute, by that uid alone (as `lanbridge ui`'s).
final class AskNotifier: Sendable {
    private let runner: HookRunner
    private let console: (auth: ConsoleAuth, url: String)?

    init(logger: Logger, metrics: BridgeMetrics, console: (auth: ConsoleAuth, url: String)?) {
        runner = HookRunner(name: "notify hook", logger: logger) { metrics.notify($0) }
        self.console = console
    }

    /// Starts a run on its own thread; returns at once.
    func notify(_ prompt: AskedInvokes.Prompt, _ settings: BridgeSettings.Notify) {
        guard settings.hook.exec != nil else { return }
        let since = Moment.now
        runner.start(["node": "\(prompt.nodeId)", "command": "\(prompt.command)"]) { [self] in
            let token = settings.consoleUid.flatMap { uid in console.map { $0.auth.mintLogin(uid: uid) } }
            let link = token.flatMap { token in console.map { Self.link($0.url, token: token, ask: prompt.id) } }
            runner.execute(
                settings.hook, input: Self.document(prompt, link: link).serialized, hiding: token,
                meta: ["node": "\(prompt.nodeId)", "command": "\(prompt.command)", "ask": "\(prompt.id)"], since: since)
        }
    }

    /// The console's login link that lands on the prompt (`/#ask-ID`).
    static func link(_ console: String, token: String, ask: String) -> String {
        "\(console)/login?token=\(token)&ask=\(PercentEncoding.encode(ask))"
    }

    /// The document on the hook's stdin (README "Ask rules"): every field always present.
    static func document(_ prompt: AskedInvokes.Prompt, link: String?) -> JSONValue {
        [
            "version": 1, "event": "ask", "id": .string(prompt.id), "nodeId": .string(prompt.nodeId), "name": .string(prompt.name),
            "command": .string(prompt.command), "askRule": .string(prompt.askRule), "asker": .string(prompt.asker), "askedAt": .string(prompt.askedAt),
            "expiresInMs": .number(Double(prompt.expiresInMs)), "params": .string(prompt.params),
            "approve": .string("lanbridge invokes approve \(prompt.id)"), "deny": .string("lanbridge invokes deny \(prompt.id)"),
            "consoleLink": link.map(JSONValue.string) ?? .null,
        ]
    }
}
