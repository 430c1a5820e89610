import ArgumentParser
import FoundationEssentials
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// A change to paired.json (revoke, block, allow, deny, remove a rule, approve, rename, unblock) is
/// reported as done only once the running daemon holds it: the CLI asks the daemon which
/// paired.json it holds and compares it with its own write. A daemon that cannot say so, or holds
/// an older file, makes the command fail with exit 75, saying the change is on disk and not yet in
/// force (issue 36: a flooded daemon missed a revoke while `nodes revoke` exited 0).
///
/// The daemon decides invokes from the store it holds and reads it again when inotify reports a
/// change (issue 40 §3: no `stat` per invoke), so this answer is also what makes "a rule changed a
/// moment ago applies to the next invoke" hold for every CLI write, grants included.
enum DaemonConfirmation {
    /// How long the daemon has to answer.
    static let timeout: TimeInterval = 10

    static func confirm(_ state: StateOptions, _ what: String, json: Bool = false) throws {
        let directory = state.directory
        guard DaemonLock.isHeld(in: directory) else { return }  // no daemon: in force when one starts
        let written = PairingStore(directory: directory).pairedFileVersion()
        let path = directory.controlSocketPath
        let problem: String
        do {
            switch try ControlClient(path: path).request(.storeApplied, params: .object([:]), timeout: timeout) {
            case let .success(value?) where value["version"]?.stringValue == written:
                return
            case let .success(value):
                // Written again since (another operator)? What counts is that the daemon holds what is on disk now.
                if let held = value?["version"]?.stringValue, held == PairingStore(directory: directory).pairedFileVersion() { return }
                problem = "it still holds an older paired.json"
            case let .failure(error):
                problem = error.message
            }
        } catch {
            problem = "\(error)"
        }
        Output.note(
            "lanbridge: \(what) is on disk, but the running daemon has not applied it: \(problem). "
                + "Until it can read the store it runs no invoke; check `lanbridge status` and the daemon's log.")
        throw ExitCode(75)
    }
}
