import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells the daemon when the CLI (or anyone) replaced paired.json, pending.json or invites.json, via
/// inotify on the state directory: approvals reach a waiting node as soon as they are written,
/// without the CLI having to find the daemon.
public final class StoreWatcher: @unchecked Sendable {
    private let fd: Int32
    private let watched: Set<String>

    public init(directory: URL, files: [String]) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC))
        watched = Set(files)
        // Atomic writes land by rename, so IN_MOVED_TO is the event; IN_CLOSE_WRITE catches hand edits.
        guard fd >= 0, inotify_add_watch(fd, directory.path, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// One element per batch of changes to the watched files. Runs on its own thread (inotify read
    /// blocks); ends when `stop` is called.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let fd = self.fd, watched = self.watched
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    continuation.finish()
                    return
                }
                var offset = 0, relevant = false
                while offset + 16 <= n {
                    let length = buffer[(offset + 12)..<(offset + 16)].reversed().reduce(0) { $0 << 8 | Int($1) }
                    let name = String(decoding: buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
                    if watched.contains(name) { relevant = true }
                    offset += 16 + length
                }
                if relevant { continuation.yield() }
            }
        }
        return stream
    }

    public func stop() {
        close(fd)
    }
}
