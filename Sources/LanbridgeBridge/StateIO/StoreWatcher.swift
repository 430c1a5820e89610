import FoundationEssentials
import NIOConcurrencyHelpers
import Glibc

/// Tells the daemon when the CLI (or anyone) replaced paired.json, pending.json or invites.json, via
/// inotify on the state directory: approvals reach a waiting node as soon as they are written,
/// without the CLI having to find the daemon.
public final class StoreWatcher: @unchecked Sendable {
    private let fd: Int32
    /// A pipe written by `stop` to wake the reader, which then closes both descriptors itself: closing
    /// an fd another thread is blocked reading leaves that thread blocked (and its next read may
    /// hit a reused descriptor number).
    private let wake: (read: Int32, write: Int32)
    private let watched: Set<String>
    private enum Phase { case idle, reading, stopped }
    private let phase = NIOLockedValueBox(Phase.idle)

    public init(directory: URL, files: [String]) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        watched = Set(files)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var ends: [Int32] = [-1, -1]
        let piped = pipe(&ends) == 0
        if piped { for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) } }
        wake = (ends[0], ends[1])
        // Atomic writes land by rename, so IN_MOVED_TO is the event; IN_CLOSE_WRITE catches hand edits.
        guard piped, inotify_add_watch(fd, directory.path, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            for descriptor in [fd, wake.read, wake.write] where descriptor >= 0 { close(descriptor) }
            throw error
        }
    }

    /// One element per batch of changes to the watched files. Runs on its own thread (it blocks in
    /// poll); ends when `stop` is called. Call it once.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let fd = self.fd, wake = self.wake, watched = self.watched
        phase.withLockedValue { $0 = .reading }
        let started = DetachedThread.start {
            defer {
                close(fd)
                close(wake.read)
                continuation.finish()
            }
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, 2, -1)
                if ready < 0 { if errno == EINTR { continue } else { return } }
                if fds[1].revents != 0 { return }  // stopped
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 {
                    if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                    return
                }
                var offset = 0, relevant = false
                while offset + 16 <= n {
                    let length = buffer[(offset + 12)..<(offset + 16)].reversed().reduce(0) { $0 << 8 | Int($1) }
                    let name = String(decoding: buffer[(offset + 16)..<min(n, offset + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
                    if watched.contains(name) { relevant = true }
                    offset += 16 + length
                }
                if relevant { continuation.yield() }
            }
        }
        if !started {  // no thread: the stream ends at once, and stop() closes the descriptors
            phase.withLockedValue { $0 = .idle }
            continuation.finish()
        }
        return stream
    }

    /// Ends `changes()`; the reader closes the descriptors (or this does, if it never started).
    public func stop() {
        let was = phase.withLockedValue { phase in
            defer { phase = .stopped }
            return phase
        }
        switch was {
        case .reading:
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        case .idle:
            close(fd)
            close(wake.read)
        case .stopped:
            return
        }
        close(wake.write)
    }
}
