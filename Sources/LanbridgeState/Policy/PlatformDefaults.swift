import LanbridgeProtocol

extension AccessRules {
    /// The canvas's everyday commands: all of `canvas.*` but `canvas.eval`, which is sensitive
    /// since 0.10.0 (issue 48 §2).
    public static let everydayCanvas = ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot", "canvas.a2ui.*"]

    /// What a newly paired node may run, by the platform it reports: everyday commands only
    /// (`CommandCatalog.table`). Deny by default: an unknown platform gets nothing until the
    /// operator allows it.
    public static func defaults(forPlatform platform: String) -> AccessRules {
        switch platform.lowercased() {
        case "ios", "android": AccessRules(allow: everydayCanvas + ["camera.list"])
        case "macos": AccessRules(allow: everydayCanvas + ["camera.list", "system.info"])
        case "linux": AccessRules(allow: everydayCanvas + ["system.info"])
        // A browser node (issue 64): the canvas only, and never a snapshot (no browser API can
        // take one of a cross-origin frame).
        case "web": AccessRules(allow: everydayCanvas.filter { $0 != "canvas.snapshot" })
        default: AccessRules()
        }
    }

    /// What a new pairing does with the sensitive commands it declares: grants them (on purpose:
    /// `--allow-sensitive`, or the operator's config), asks each time, or withholds them (the default).
    public enum SensitiveChoice: String, Sendable, CaseIterable { case grant, ask, withhold }

    /// The sensitive commands in `declared` these rules do not allow yet, granted (as confirmed)
    /// or made ask rules, as `choice` says.
    public mutating func take(sensitiveIn declared: [String], _ choice: SensitiveChoice) {
        guard choice != .withhold else { return }
        let compiled = CompiledRules(self)
        for command in declared where CommandCatalog.sensitivity(of: command) != nil && !compiled.allows(command) {
            if choice == .grant {
                grant(command)
            } else if !ask.contains(command) {
                ask.append(command)
            }
        }
    }

    /// The defaults up to 0.7.0, which granted capture (and, on Android, sms.send): what they gave
    /// and nobody confirmed is flagged, never silently taken away.
    public static func defaultsUpTo070(forPlatform platform: String) -> [String] {
        let ios = ["canvas.*", "camera.list", "camera.snap", "screen.record", "location.get"]
        return switch platform.lowercased() {
        case "ios": ios
        case "android": ios + ["sms.send"]
        case "macos": ["canvas.*", "camera.list", "camera.snap", "screen.record", "screen.snapshot", "system.info"]
        case "linux": ["canvas.*", "screen.record", "screen.snapshot", "system.info"]
        default: []
        }
    }
}

extension PairedNode {
    /// Sensitive patterns in this node's allowlist that only an old default gave it (capture before
    /// 0.8.0; `canvas.*`, and with it `canvas.eval`, before 0.10.0): shown by `doctor`, `nodes
    /// describe` and the console until `nodes allow --confirm-defaults` or `nodes deny`.
    public var grantedByOldDefault: [String] {
        let old = AccessRules.defaultsUpTo070(forPlatform: details.platform)
        return access.allow.filter { old.contains($0) && CommandCatalog.isSensitive(pattern: $0) && !access.confirmed.contains($0) }
    }
}
