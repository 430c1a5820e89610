import LanbridgeCrypto

/// What a reload (SIGHUP) does with the settings and gateway token read again, decided alone: what
/// applies now, what keeps its running value, what changed (for the log) and what waits for a
/// restart (ReloadPlanTests). The daemon carries it out (`BridgeServer`'s reload loop).
public struct ReloadPlan: Sendable {
    /// The settings to run with from now: the new ones, but the limits the transports were sized by.
    public var settings: BridgeSettings
    /// Limits that keep their running value until a restart (the message sizes).
    public var kept: [String]
    /// What differs, for the log: "limits", "access rules", "gateway token".
    public var changes: [String]
    /// The new token, when it changed (the link uses it at its next dial).
    public var newToken: SecureBytes?
    /// Sentences for the log: parts that changed in the file but apply only after a restart.
    public var afterRestart: [String]

    public init(running: BridgeSettings, token: SecureBytes?, read settings: BridgeSettings, token newToken: SecureBytes?) {
        var next = settings
        (next.limits, kept) = running.limits.reloaded(to: settings.limits)
        self.settings = next
        var changes: [String] = []
        if running.limits != next.limits { changes.append("limits") }
        if running.policy != next.policy || running.defaultsAdd != next.defaultsAdd || running.defaultsRemove != next.defaultsRemove
            || running.extraCommands != next.extraCommands
        {
            changes.append("access rules")
        }
        let tokenChanged = token?.withUnsafeBytes { Array($0) } != newToken?.withUnsafeBytes { Array($0) }
        if tokenChanged { changes.append("gateway token") }
        self.changes = changes
        self.newToken = tokenChanged ? newToken : nil
        var afterRestart: [String] = []
        if !kept.isEmpty {
            afterRestart.append(
                "\(kept.joined(separator: ", ")) applies after a restart: the message sizes the transports allow were fixed when they started; kept the running value")
        }
        if next.gateway != running.gateway || next.admission != running.admission {
            afterRestart.append("the gateway's URL and options and the admission limits apply after a restart")
        }
        if (next.canvas.enabled, next.canvas.listen, next.canvas.upstream) != (running.canvas.enabled, running.canvas.listen, running.canvas.upstream)
            || next.openClawApps != running.openClawApps || next.browser != running.browser
        {
            afterRestart.append(
                "the canvas relay's address and upstream, the door for OpenClaw's apps and the browser door apply after a restart (what a canvas may load applies now)")
        }
        self.afterRestart = afterRestart
    }
}
