import ArgumentParser
import LanbridgeBridge

@main
struct Lanbridge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lanbridge",
        abstract: "A LAN companion bridge between paired devices (nodes) and a loopback agent gateway.",
        discussion: """
            Nodes (phone, tablet or laptop apps) pair with this bridge using a Noise XX handshake and an operator's approval. Run the daemon with `lanbridge serve`; approve devices with `lanbridge nodes pending` and `lanbridge nodes approve`. Every command works whether or not the daemon runs: the files are the truth. The daemon and this CLI share one state directory, private (0700) or shared with its group (0770, as the Debian package's /var/lib/lanbridge is with the lanbridge group):

              identity.key   the bridge's X25519 key (mode 0600, never printed)
              identity.pub   its public half, for group members who cannot read the key
              paired.json    paired nodes and their access rules (public keys only)
              pending.json   pairing requests waiting for approval
              config.json    optional: access-rule defaults, limits, gateway (see pairing/PROTOCOL.md §12)
              control.sock   the running daemon's operator socket (`nodes invoke`, `ui`)

            The state directory is --state-dir, else $LANBRIDGE_STATE_DIR, else /var/lib/lanbridge for root and for members of its group, else $XDG_STATE_HOME/lanbridge.

            Exit codes:
              0    success
              1    refused: unknown ID, expired request, code mismatch
              64   bad usage
              65   a state file is corrupt (it is left untouched)
              74   I/O error
              69   the daemon is not running (nodes invoke)
              66   there is no state directory there (check --state-dir), or no identity yet
              75   try again later: the state is locked, another daemon serves this state directory, or the port is in use
              77   not permitted: a port below 1024, or a state directory that is not yours (join its group)
              78   the config file or a setting is wrong (or the state directory is writable by others); the message names it
            """,
        version: BridgeServer.version,
        subcommands: [
            ServeCommand.self, StatusCommand.self, NodesCommand.self, UICommand.self, CanvasCommand.self, CACommand.self, InviteCommand.self, IdentityCommand.self,
            DiscoverCommand.self,
            DoctorCommand.self, AuditCommand.self, GatewayCommand.self, ConfigCommand.self, BackupCommand.self, RestoreCommand.self, ActivityCommand.self, InvokesCommand.self,
        ]
    )
}
