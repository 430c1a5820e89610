import ArgumentParser
import FoundationEssentials
import LanbridgeBridge
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `lanbridge backup FILE`: the bridge's identity, pairings, rules, invites, audit log,
/// certificates and config in one file, taken consistently while the daemon runs.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Save everything the bridge is (its key, pairings, rules, audit log, config) to one file.",
        discussion: """
            The snapshot is taken under the store's lock, so it is consistent while the daemon runs. The file holds the bridge's private key: anyone with it can pose as this bridge to your devices. It is written 0600; keep it like a password (offline, or encrypted).

              $ lanbridge backup /root/lanbridge-$(date +%F).tar
              $ lanbridge restore /root/lanbridge-2026-11-27.tar    # on the new disk, with the daemon stopped

            Exit codes: 0 written, 66 the state directory holds no bridge, 73 FILE exists or cannot be written.
            """)
    @OptionGroup var state: StateOptions
    @Argument(help: ArgumentHelp("Where to write the backup (a tar file; it must not exist yet).", valueName: "file")) var file: String
    @Flag(help: "Print JSON: {file, lanbridge, created, files, pairedNodes}.") var json = false

    func run() throws {
        try Output.run {
            let made: (archive: [UInt8], manifest: StateBackup.Manifest)
            do { made = try StateBackup.make(directory: state.directory, lanbridge: BridgeServer.version) } catch let failure as StateBackup.Failure {
                Output.note("lanbridge: \(failure)")
                throw ExitCode(66)
            }
            let url = URL(fileURLWithPath: file)
            do {
                guard try AtomicFile.create(made.archive, at: url, mode: 0o600) else {
                    Output.note("lanbridge: \(file) exists; back up to a new file")
                    throw ExitCode(73)
                }
            } catch let error as StoreError {
                Output.note("lanbridge: cannot write \(file): \(error)")
                throw ExitCode(73)
            }
            let nodes = (try? PairingStore(directory: state.directory).read().paired.nodes.count) ?? 0
            if json {
                return try Output.json(
                    [
                        "file": .string(url.path), "lanbridge": .string(made.manifest.lanbridge), "created": .string(ISO8601Text.string(made.manifest.created)),
                        "files": .array(made.manifest.files.map { .string($0.name) }), "pairedNodes": .number(Double(nodes)),
                    ] as JSONValue)
            }
            print("Backed up \(made.manifest.files.count) files (the identity, \(nodes) paired node\(nodes == 1 ? "" : "s"), the audit log, …) to \(url.path).")
            print("It holds the bridge's private key: anyone with it can pose as this bridge. It is 0600; keep it like a password.")
        }
    }
}

/// `lanbridge restore FILE`: a backup back into a state directory, checked whole first.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a backup back: the same bridge, so paired devices reconnect without pairing again.",
        discussion: """
            The whole file is checked before anything is written: the archive, every file's hash, and each file opened as lanbridge opens it (the key, the store, the config, the audit chain). Stop the daemon first; restore as the user that runs it (sudo -u lanbridge for the package's service), so the files are the daemon's.

            Exit codes: 0 restored, 65 the file is not a whole lanbridge backup or is from a newer lanbridge (nothing written), 66 FILE cannot be read, 73 the state directory already holds a bridge (--replace), 75 a daemon runs on it.
            """)
    @OptionGroup var state: StateOptions
    @Argument(help: ArgumentHelp("The backup `lanbridge backup` wrote.", valueName: "file")) var file: String
    @Flag(help: "Replace the bridge this state directory already holds (its key and pairings are lost).") var replace = false
    @Flag(help: "Print JSON: {lanbridge, created, files, pairedNodes}.") var json = false

    func run() throws {
        try Output.run {
            guard let data = FileManager.default.contents(atPath: file) else {
                Output.note("lanbridge: cannot read \(file)")
                throw ExitCode(66)
            }
            let manifest: StateBackup.Manifest
            do {
                manifest = try StateBackup.restore(Array(data), into: state.directory, replace: replace)
            } catch let failure as StateBackup.Failure {
                Output.note("lanbridge: \(failure)")
                switch failure {
                case .daemonRunning: throw ExitCode(75)
                case .targetHoldsState: throw ExitCode(73)
                case .refused, .noIdentity: throw ExitCode(65)
                }
            }
            let nodes = (try? PairingStore(directory: state.directory).read().paired.nodes.count) ?? 0
            if json {
                return try Output.json(
                    [
                        "lanbridge": .string(manifest.lanbridge), "created": .string(ISO8601Text.string(manifest.created)),
                        "files": .array(manifest.files.map { .string($0.name) }), "pairedNodes": .number(Double(nodes)),
                    ] as JSONValue)
            }
            print(
                "Restored the backup lanbridge \(manifest.lanbridge) made at \(ISO8601Text.string(manifest.created)) into \(state.directory.url.path): \(manifest.files.count) files, \(nodes) paired node\(nodes == 1 ? "" : "s")."
            )
            print("Start the daemon: paired devices reconnect to it without pairing again (it is the same bridge, at the addresses they know).")
        }
    }
}
