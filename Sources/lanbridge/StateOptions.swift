import ArgumentParser
import LanbridgeState

/// Options every command that touches the state directory shares.
struct StateOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("State directory.", discussion: "Default: $LANBRIDGE_STATE_DIR, /var/lib/lanbridge (root), or $XDG_STATE_HOME/lanbridge.", valueName: "dir"))
    var stateDir: String?

    var directory: StateDirectory { StateDirectory.resolve(override: stateDir) }
}
