/// lanbridge's command names and OpenClaw's, in one table (README, "Using lanbridge with
/// OpenClaw"). A command with the same name and contract on both sides passes as it is; one that
/// differs only in name is renamed; anything else OpenClaw does not know is not offered to it.
public enum OpenClawCommands {
    /// What an OpenClaw gateway's operator runs to remove a node lanbridge no longer pairs: its
    /// device and that device's token (`openclaw devices remove`); a node record its operator
    /// approved stays in `node.list` unless the gateway has a command for it (2026.4.12 has none).
    /// A node's own socket may remove neither.
    public static func cleanup(deviceId: String) -> String {
        "`openclaw devices remove \(deviceId)` at the gateway (and `openclaw nodes remove` for its node record, on gateways that have it)"
    }

    /// What `nodes revoke` and the console say after revoking a node the gateway knows as `deviceId`.
    public static func keptNotice(deviceId: String) -> String {
        "The OpenClaw gateway keeps its device \(deviceId), that device's token and its node.list entry: remove them with \(cleanup(deviceId: deviceId))."
    }

    /// Renamed on the way: (lanbridge, OpenClaw).
    public static let renamed: [(lanbridge: String, openClaw: String)] = [
        ("system.info", "device.info")
    ]

    /// The node commands OpenClaw's gateway knows (its platform allowlists and its dangerous list,
    /// openclaw-gateway-protocol.md §5), where lanbridge has a command of the same name and meaning.
    public static let shared: [String] = [
        "canvas.present", "canvas.hide", "canvas.navigate", "canvas.eval", "canvas.snapshot",
        "canvas.a2ui.push", "canvas.a2ui.pushJSONL", "canvas.a2ui.reset",
        "camera.list", "camera.snap", "camera.clip",
        "screen.record", "screen.snapshot",
        "location.get",
        "sms.send",
        "system.notify", "system.run",
    ]

    /// OpenClaw's name for a lanbridge command, or nil when it is not offered to OpenClaw. Names
    /// compare with ASCII case folded (`CommandPattern.same`); the answer is spelled as OpenClaw
    /// spells it (`canvas.a2ui.pushJSONL`), whatever the node declared.
    public static func openClawName(_ lanbridge: String) -> String? {
        if let pair = renamed.first(where: { CommandPattern.same($0.lanbridge, lanbridge) }) { return pair.openClaw }
        return shared.first { CommandPattern.same($0, lanbridge) }
    }

    /// lanbridge's name for a command OpenClaw invokes, or nil when lanbridge has none.
    public static func lanbridgeName(_ openClaw: String) -> String? {
        if let pair = renamed.first(where: { CommandPattern.same($0.openClaw, openClaw) }) { return pair.lanbridge }
        return shared.first { CommandPattern.same($0, openClaw) }
    }
}
