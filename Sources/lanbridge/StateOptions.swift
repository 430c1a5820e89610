import ArgumentParser
import FoundationEssentials
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores

/// Options every command that touches the state directory shares.
struct StateOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "State directory.", discussion: "Default: $LANBRIDGE_STATE_DIR, /var/lib/lanbridge (root, or a member of its group), or $XDG_STATE_HOME/lanbridge.", valueName: "dir"))
    var stateDir: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (access-rule defaults, limits, gateway).", discussion: "Default: $LANBRIDGE_CONFIG, else config.json in the state directory if it exists.",
            valueName: "file"))
    var config: String?

    var directory: StateDirectory { StateDirectory.resolve(override: stateDir) }

    /// The config file, checked entry by entry; errors name the entry (exit 78).
    func settings() throws -> BridgeSettings {
        if let path = config ?? ProcessInfo.processInfo.environment["LANBRIDGE_CONFIG"], !path.isEmpty {
            return try BridgeSettings.load(from: URL(fileURLWithPath: path))
        }
        return try BridgeSettings.load(directory: directory)
    }
}

extension StateDirectory {
    /// The running daemon's control socket: where runtime.json says, else the usual place.
    var controlSocketPath: String { RuntimeStatusFile(directory: self).read()?.controlSocket ?? file("control.sock").path }
}
