import FoundationEssentials
import Glibc
import LanbridgeFiles
import LanbridgeState

/// runtime.json: the running daemon's `RuntimeStatus`.
public struct RuntimeStatusFile: Sendable {
    public static let fileName = StateFormat.File.runtime.rawValue
    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// Replaced atomically but not synced: it describes a running process, and after a crash the
    /// process it names is gone anyway (`read` checks).
    public func write(_ status: RuntimeStatus) throws {
        try AtomicFile.write(StateJSON.encode(status), to: url, durable: false)
    }

    /// The daemon's status, or nil when no daemon is running (or one of a newer format writes it:
    /// its state files are refused anyway).
    public func read() -> RuntimeStatus? {
        guard let data = try? Data(contentsOf: url), let opened = try? StateFormat.current.bytes(data, as: .runtime, url: url),
            let status = try? StateJSON.decoder.decode(RuntimeStatus.self, from: opened.bytes)
        else {
            return nil
        }
        return kill(status.pid, 0) == 0 || errno == EPERM ? status : nil
    }

    public func remove() {
        unlink(url.path)
    }
}
