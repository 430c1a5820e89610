import ArgumentParser
import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `nodes allow|deny|describe`: one node's access rules, edited and shown from the files, so they
/// work with or without the daemon; a running daemon applies a change to the very next invoke.
extension NodesCommand {
    struct Allow: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let a node run a command (or a pattern such as canvas.*).",
            discussion: """
                A command runs only when it is allowed here AND the node declared it when it paired. Patterns are checked against the known commands (and the node's declared ones), so a typo is refused instead of never matching.

                  $ lanbridge nodes allow Pixel-7 device.echo
                  $ lanbridge nodes allow Pixel-7 device.echo --remove     # take the rule out again

                `*` allows every command the node declared, present and future: it needs --allow-everything.

                Sensitive commands (capture, microphone, SMS, location, input, system.run) granted here are recorded as confirmed. Before 0.8.0 the platform defaults granted some of them on their own; `doctor` and `nodes describe` flag those as "granted by an old default" until you keep them or take them away:

                  $ lanbridge nodes allow Pixel-7 --confirm-defaults       # keep them
                  $ lanbridge nodes deny Pixel-7 camera.snap               # or take one away
                """)
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name.") var node: String
        @Argument(help: "Command or pattern: camera.snap, canvas.*.") var pattern: String?
        @Flag(help: "Remove this allow rule instead of adding it.") var remove = false
        @Flag(help: "Confirm that `*` (every command) is meant.") var allowEverything = false
        @Flag(help: "Keep the sensitive commands an old default granted (no pattern).") var confirmDefaults = false
        @Flag(help: "Allow more than display to a node paired through an unverified page (browser-unverified): whoever served that page may hold its key.")
        var unverifiedPage = false
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if confirmDefaults {
                if pattern != nil || remove { throw ValidationError("--confirm-defaults takes a node and no pattern") }
                return
            }
            guard let pattern else { throw ValidationError("give a command or pattern to allow (or --confirm-defaults)") }
            if pattern == "*", !remove, !allowEverything {
                throw ValidationError("`*` lets the node run every command it declares, now and later; pass --allow-everything if that is meant")
            }
        }

        func run() throws {
            try Output.run {
                guard let pattern else { return try confirm() }
                if remove {
                    return try removeRule(state, node: node, pattern: pattern, kind: .allow, json: json)
                }
                try addRule(state, node: node, pattern: pattern, .allow, unverifiedPage: unverifiedPage, json: json)
            }
        }

        private func confirm() throws {
            let settings = try state.settings()
            let store = PairingStore(directory: state.directory)
            let kept = try store.read().node(matching: node).grantedByOldDefault
            let updated = kept.isEmpty ? try store.read().node(matching: node) : try store.update { try $0.confirmDefaults(node: node) }
            if json { return try Output.json(NodeDescription(updated, live: live(state, updated), policy: settings.policy, now: Date())) }
            print(
                kept.isEmpty
                    ? "\(updated.details.displayName) (\(updated.nodeId)) holds nothing granted by an old default."
                    : "Kept \(kept.joined(separator: ", ")) for \(updated.details.displayName) (\(updated.nodeId)), now as confirmed grants.")
        }
    }

    struct Deny: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop a node running a command or pattern.",
            discussion:
                "Removes an identical allow rule and records a deny rule, which wins over wildcards: `nodes deny <node> canvas.eval` keeps the rest of canvas.* allowed. `--remove` takes a deny rule out again."
        )
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name.") var node: String
        @Argument(help: "Command or pattern.") var pattern: String
        @Flag(help: "Remove this deny rule instead of adding it.") var remove = false
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                if remove { return try removeRule(state, node: node, pattern: pattern, kind: .deny, json: json) }
                try addRule(state, node: node, pattern: pattern, .deny, json: json)
            }
        }
    }

    struct Ask: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask me each time the node is to run this command or pattern.",
            discussion: """
                An invoke the pattern matches waits at the bridge until you answer it (`lanbridge invokes pending`, then `invokes approve ID` or `invokes deny ID`), or is refused when nobody answers in time (FORBIDDEN, ASK_TIMEOUT). Deny rules win over ask rules, and ask rules over allow rules: an ask rule is all the node needs for the command, once you say yes. `--remove` takes an ask rule out again.

                  $ lanbridge nodes ask "Ada's phone" camera.snap
                  $ lanbridge nodes ask "Ada's phone" 'screen.*'
                """)
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name.") var node: String
        @Argument(help: "Command or pattern.") var pattern: String
        @Flag(help: "Remove this ask rule instead of adding it.") var remove = false
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                if remove { return try removeRule(state, node: node, pattern: pattern, kind: .ask, json: json) }
                let settings = try state.settings()
                let updated = try PairingStore(directory: state.directory).addRule(pattern, .ask, node: node, catalog: settings.catalog).after
                try DaemonConfirmation.confirm(state, "the ask rule \(pattern) for \(updated.details.displayName)")
                if json { return try Output.json(NodeDescription(updated, live: live(state, updated), policy: settings.policy, now: Date())) }
                print("\(updated.details.displayName) (\(updated.nodeId)) now waits for your answer before it runs \(pattern) (lanbridge invokes pending).")
                print("ask:   \(list(updated.access.ask))")
            }
        }
    }

    struct Describe: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one node: what it declared, what it may run, and whether it is connected.",
            discussion: "The same description the gateway gets from node.describe.")
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name.") var node: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let settings = try state.settings()
                let found = try PairingStore(directory: state.directory).read().node(matching: node)
                let runtime = RuntimeStatusFile(directory: state.directory).read()
                let d = NodeDescription(
                    found, live: runtime?.nodes[found.nodeId.description], policy: settings.policy, now: Date(),
                    gatewayDevice: runtime?.openClawDevices?[found.nodeId.description])
                if json { return try Output.json(d) }
                let state = d.connected ? (d.foreground == false ? "connected, in the background" : "connected, in the foreground") : "offline"
                print(
                    """
                    \(d.displayName) (\(d.nodeId))
                      platform:   \(d.platform) \(d.osVersion ?? "")  app \(d.appVersion ?? "?")  model \(d.deviceModel ?? "?")
                      state:      \(state)\(d.address.map { " from \($0)" } ?? "")
                      paired:     \(ISO8601Text.string(d.pairedAt)) by \(d.pairingMethod.rawValue)
                      declared:   \(list(d.declaredCommands))
                      allow:      \(list(d.access.allow))\(d.grantedByOldDefault == nil ? "" : "\n  warning:    \((d.grantedByOldDefault ?? []).joined(separator: ", ")) granted by an old default, not on purpose; keep with `lanbridge nodes allow \(d.nodeId) --confirm-defaults`, or `lanbridge nodes deny \(d.nodeId) COMMAND`")
                      deny:       \(list(d.access.deny))
                      ask:        \(list(d.access.ask))
                      may run:    \(list(d.allowedCommands))
                      flags:      requiresForeground=\(d.flags.requiresForeground) supportsInputInjection=\(d.flags.supportsInputInjection)
                    """)
                if d.keyStorage == "extractable" {
                    print("  key:        extractable: its browser has no WebCrypto X25519, so the page keeps the key's bytes (script on its origin could read them)")
                }
                if d.pairingMethod == .browserUnverified {
                    print(
                        "  warning:    paired through an unverified page (a self-signed certificate): its code proved nothing against a man in the middle. More than display needs `nodes allow \(d.nodeId) COMMAND --unverified-page`."
                    )
                }
                for withheld in d.withheld ?? [] {
                    print("  withheld:   \(withheld.command): \(withheld.reason) (`lanbridge nodes allow \(d.nodeId) \(withheld.command)`)")
                }
                if let app = d.openClawApp {
                    print("  OpenClaw app: \(app.clientId), device \(app.deviceId), approved on certificate sha256 \(app.tlsSha256 ?? "none (plain ws)")")
                }
                if let push = d.push {
                    print(
                        "  push:       \(push.provider)\(push.environment.map { " (\($0))" } ?? "")\(push.topic.map { " for \($0)" } ?? ""), registered \(ISO8601Text.string(push.registeredAt)), token sha256 \(push.tokenHash)…"
                    )
                }
                if let device = d.gatewayDeviceId {
                    print("  gateway:    OpenClaw device \(device): \(d.gatewaySession ?? "not connected")")
                }
            }
        }
    }
}

private func list(_ items: [String]) -> String { items.isEmpty ? "-" : items.joined(separator: ", ") }

struct RuleRefused: Error, CustomStringConvertible {
    let description: String
}

/// The node's live state from the running daemon, so every --json node object says the same.
private func live(_ state: StateOptions, _ node: PairedNode) -> RuntimeStatus.Node? {
    RuntimeStatusFile(directory: state.directory).read()?.nodes[node.nodeId.description]
}

private func removeRule(_ state: StateOptions, node: String, pattern: String, kind: PairingState.RuleKind, json: Bool) throws {
    let settings = try state.settings()
    let updated = try PairingStore(directory: state.directory).update { try $0.removeRule(pattern, kind: kind, node: node) }
    try DaemonConfirmation.confirm(state, "the removal of \(pattern) from \(updated.details.displayName)")
    if json { return try Output.json(NodeDescription(updated, live: live(state, updated), policy: settings.policy, now: Date())) }
    print("Removed the \(kind.rawValue) rule \(pattern) from \(updated.details.displayName) (\(updated.nodeId)).")
    print("allow: \(list(updated.access.allow))")
    if !updated.access.deny.isEmpty { print("deny:  \(list(updated.access.deny))") }
}

private func addRule(_ state: StateOptions, node: String, pattern: String, _ kind: PairingState.RuleKind, unverifiedPage: Bool = false, json: Bool) throws {
    let settings = try state.settings()
    let allowing = kind == .allow
    let verb = allowing ? "Allowed" : "Denied"
    let (before, updated) = try PairingStore(directory: state.directory).addRule(
        pattern, kind, node: node, catalog: settings.catalog, unverifiedPage: unverifiedPage)
    try DaemonConfirmation.confirm(state, "the \(kind.rawValue) rule \(pattern) for \(updated.details.displayName)")
    if json { return try Output.json(NodeDescription(updated, live: live(state, updated), policy: settings.policy, now: Date())) }
    print("\(verb) \(pattern) for \(updated.details.displayName) (\(updated.nodeId)).")
    print("allow: \(list(updated.access.allow))")
    if !updated.access.deny.isEmpty { print("deny:  \(list(updated.access.deny))") }
    // What allowing did to the deny rules, and what it could not do: a deny rule wins.
    if allowing, before.access.deny.contains(pattern) {
        print("This removed the deny rule \(pattern).")
    }
    if allowing, !OriginPattern.isOrigin(pattern), let command = try? CommandPattern(pattern),
        let winning = updated.access.deny.first(where: { rule in
            (try? CommandPattern(rule)).map { $0.matches(pattern) || command.matches(rule) } ?? false
        })
    {
        Output.note(
            "note: the deny rule \(winning) still matches \(pattern), and deny rules win; to lift it: lanbridge nodes deny \(updated.nodeId) \(winning) --remove")
    }
    if allowing, !OriginPattern.isOrigin(pattern), !updated.details.commands.contains(where: { (try? CommandPattern(pattern))?.matches($0) == true }) {
        Output.note("note: the node did not declare \(pattern), so it still cannot run it until it does")
    }
}
