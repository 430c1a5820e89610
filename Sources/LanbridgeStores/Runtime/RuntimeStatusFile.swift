import FoundationEssentials
import Glibc
import LanbridgeFiles
import LanbridgeState

/// runtime.json: the running daemon's `RuntimeStatus`.
public struct RuntimeStatusFile: Sendable {
    public static let fileName = "runtime.json"
    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// Replaced atomically but not synced: it describes a running process, and after a crash the
    /// process it names is gone anyway (`read` checks).
    public func write(_ status: RuntimeStatus) throws {
        try AtomicFile.write(StateJSON.encode(status), to: url, durable: false)
    }

    /// The daemon's status, or nil when no daemon is running.
    public func read() -> RuntimeStatus? {
        guard let data = try? Data(contentsOf: url), let status = try? StateJSON.decoder.decode(RuntimeStatus.self, from: data) else {
            return nil
        }
        return kill(status.pid, 0) == 0 || errno == EPERM ? status : nil
    }

    public func remove() {
        unlink(url.path)
    }
}
