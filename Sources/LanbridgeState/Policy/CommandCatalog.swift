import LanbridgeProtocol

/// The command names lanbridge knows. Access rules in the config file and `nodes allow|deny` are
/// checked against it, so a typo (`camera.snpa`) is an error instead of a rule that never applies.
/// Apps with their own commands name them in the config file's `commands.extra`.
public struct CommandCatalog: Sendable {
    public static let builtIn: [String] = [
        "canvas.present", "canvas.hide", "canvas.navigate", "canvas.eval", "canvas.snapshot",
        "canvas.a2ui.push", "canvas.a2ui.reset",
        "camera.list", "camera.snap", "camera.clip",
        "screen.record", "screen.snapshot", "screen.tap", "screen.type",
        "input.tap", "input.type", "input.key",
        "location.get",
        "sms.send",
        "voice.start", "voice.stop",
        "system.info", "system.notify", "system.run",
        "device.echo",
    ]

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
