import ArgumentParser
import LanbridgeProtocol
import LanbridgeState

/// `--allow` and `--allow-sensitive`, the same on `nodes approve` and `invite`: what a node gets
/// beyond its platform's everyday defaults. Sensitive commands (capture, sending, running code,
/// personal data, input) are never granted by default, only named here or with `nodes allow`.
struct GrantOptions: ParsableArguments {
    @Option(
        name: .customLong("allow"),
        help: ArgumentHelp(
            "Also grant this command or pattern, beyond the platform's everyday defaults; repeatable, or comma-separated (camera.snap,location.get).",
            valueName: "command"))
    var allow: [String] = []

    @Flag(help: "Also grant every sensitive command the device declares (camera, screen, microphone, SMS, location, input, system.run), on purpose.")
    var allowSensitive = false

    @Option(
        name: .customLong("ask"),
        help: ArgumentHelp(
            "Let the device run this command or pattern only once you say yes, each time (lanbridge invokes pending); repeatable, or comma-separated.",
            valueName: "command"))
    var ask: [String] = []

    @Flag(help: "Ask each time for every sensitive command the device declares, instead of withholding them (the default) or granting them (--allow-sensitive).")
    var askSensitive = false

    /// Checks every pattern against the catalogue (and `declared`) before anything is written.
    func grant(_ catalog: CommandCatalog, declared: [String] = []) throws -> ApprovalGrant {
        func checked(_ list: [String], _ flag: String) throws -> [String] {
            try list.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }.map { item in
                do { return try catalog.check(item, also: declared).description } catch { throw ValidationError("\(flag): \(error)") }
            }
        }
        let patterns = try checked(allow, "--allow"), asked = try checked(ask, "--ask")
        if patterns.contains("*") {
            throw ValidationError("--allow: `*` grants every command, now and later; grant it after pairing with `lanbridge nodes allow NODE '*' --allow-everything`")
        }
        if allowSensitive, askSensitive { throw ValidationError("--allow-sensitive grants them, --ask-sensitive asks each time: one or the other") }
        return ApprovalGrant(allow: patterns, allowSensitive: allowSensitive, ask: asked, askSensitive: askSensitive)
    }
}

/// What an approval or a redeemed invite gave the node, and what it declared but did not get.
struct GrantReport {
    let node: PairedNode
    let withheld: [ApprovalGrant.Withheld]

    init(node: PairedNode) {
        self.node = node
        withheld = ApprovalGrant.withheld(node.access, declared: node.details.commands)
    }

    /// The granted rules, then each withheld command with the line that grants it.
    func print() {
        Swift.print("Granted: \(node.access.allow.isEmpty ? "nothing" : node.access.allow.joined(separator: ", "))")
        if !node.access.ask.isEmpty { Swift.print("Asked each time: \(node.access.ask.joined(separator: ", ")) (lanbridge invokes pending)") }
        let sensitive = withheld.filter(\.sensitive), other = withheld.filter { !$0.sensitive }
        if !sensitive.isEmpty {
            Swift.print("Not granted, sensitive (grant on purpose):")
            for item in sensitive {
                Swift.print("  \(item.command.padded(to: 16))\(CommandCatalog.sensitivity(of: item.command)?.rawValue ?? item.reason)")
                Swift.print("    lanbridge nodes allow \(node.nodeId) \(item.command)")
            }
        }
        if !other.isEmpty {
            Swift.print("Also declared, not granted: \(other.map(\.command).joined(separator: ", ")) (`lanbridge nodes allow \(node.nodeId) COMMAND`)")
        }
    }
}

/// The node's JSON object (as `nodes approve` printed it before 0.8.0) plus `granted` and `withheld`.
struct GrantedNode: Encodable {
    let node: PairedNode

    private enum Keys: String, CodingKey { case granted, withheld }

    func encode(to encoder: any Encoder) throws {
        try node.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(node.access.allow, forKey: .granted)
        try c.encode(GrantReport(node: node).withheld, forKey: .withheld)
    }
}
