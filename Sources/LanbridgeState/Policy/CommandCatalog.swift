import LanbridgeProtocol

/// The command names lanbridge knows. Access rules in the config file and `nodes allow|deny` are
/// checked against it, so a typo (`camera.snpa`) is an error instead of a rule that never applies.
/// Apps with their own commands name them in the config file's `commands.extra`.
public struct CommandCatalog: Sendable {
    /// Why a command is sensitive: never granted by a platform default, only on purpose.
    public enum Sensitivity: String, Codable, Sendable {
        case captures = "captures the camera, screen or microphone"
        case sendsAsTheUser = "sends on the user's behalf"
        case runsCode = "runs code on the device"
        case readsPersonalData = "reads personal data"
        case injectsInput = "injects input"
        /// `canvas.eval` (issue 48 §2): the canvas's own pages are held to the relay's CSP, a script
        /// the agent writes is not (it can navigate the webview anywhere).
        case scriptsTheCanvas = "runs the agent's script in the canvas, which can reach whatever the webview can"
    }

    /// Every built-in command and, for the sensitive ones, why. The one table: platform defaults,
    /// approval, `nodes describe`, `doctor` and the deny hint all read it (PROTOCOL.md §13.1).
    public static let table: [(name: String, sensitive: Sensitivity?)] = [
        ("canvas.present", nil), ("canvas.hide", nil), ("canvas.navigate", nil), ("canvas.eval", .scriptsTheCanvas), ("canvas.snapshot", nil),
        ("canvas.a2ui.push", nil), ("canvas.a2ui.pushJSONL", nil), ("canvas.a2ui.reset", nil),
        ("camera.list", nil), ("camera.snap", .captures), ("camera.clip", .captures),
        ("screen.record", .captures), ("screen.snapshot", .captures), ("screen.tap", .injectsInput), ("screen.type", .injectsInput),
        ("input.tap", .injectsInput), ("input.type", .injectsInput), ("input.key", .injectsInput),
        ("location.get", .readsPersonalData),
        ("sms.send", .sendsAsTheUser),
        ("voice.start", .captures), ("voice.stop", .captures),
        ("system.info", nil), ("system.notify", nil), ("system.run", .runsCode),
        ("device.echo", nil),
        // Not a command: the grant that lets a node's notifications.changed events reach an
        // OpenClaw gateway's agent (OpenClawNodeEvents.catalogue).
        ("notifications.changed", .readsPersonalData),
    ]

    public static let builtIn: [String] = table.map(\.name)
    private static let sensitiveCommands: [String: Sensitivity] = Dictionary(
        uniqueKeysWithValues: table.compactMap { row in row.sensitive.map { (CommandPattern.key(row.name), $0) } })

    /// Why `command` is sensitive; nil for everyday and custom commands.
    public static func sensitivity(of command: String) -> Sensitivity? { sensitiveCommands[CommandPattern.key(command)] }

    /// Whether a pattern reaches any sensitive command (`camera.*` does, `canvas.*` does not).
    public static func isSensitive(pattern: String) -> Bool {
        guard let parsed = try? CommandPattern(pattern) else { return false }
        return sensitiveCommands.keys.contains(where: parsed.matches)
    }

    public let names: Set<String>

    public init(extra: [String] = []) {
        names = Set(Self.builtIn + extra)
    }

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case badPattern(CommandPattern.Invalid)
        case unknown(String)

        public var description: String {
            switch self {
            case let .badPattern(invalid): "\(invalid)"
            case let .unknown(pattern): "\"\(pattern)\" matches no known command (a typo? custom commands go in the config file's commands.extra)"
            }
        }
    }

    /// Parses `text` and checks that it names at least one known command (or one in `also`).
    public func check(_ text: String, also: [String] = []) throws(Problem) -> CommandPattern {
        let pattern: CommandPattern
        do { pattern = try CommandPattern(text) } catch { throw .badPattern(error) }
        guard names.contains(where: pattern.matches) || also.contains(where: pattern.matches) else { throw .unknown(text) }
        return pattern
    }
}
