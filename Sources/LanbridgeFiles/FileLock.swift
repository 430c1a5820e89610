#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import LanbridgeProtocol

/// An exclusive `flock` on a lock file, shared by every lanbridge process using one state directory
/// (the daemon and each CLI invocation). Each acquisition opens its own file description, so threads
/// in one process exclude each other too.
///
/// A reader needs no write access (issue 61 §1): when the lock file cannot be opened for writing (a
/// read-only file system, an immutable directory, a user without write permission), a reader
/// locks it opened read-only (flock does not care), and when it cannot be created either, reads
/// without it (nobody can write there then, and every file is replaced whole anyway).
///
/// The wait is measured on the monotonic clock: a step of the wall clock neither cuts it short
/// nor stretches it (issue 61 §2).
public struct FileLock: Sendable {
    public let url: URL
    public let timeout: Double

    public init(url: URL, timeout: Double = 10) {
        self.url = url
        self.timeout = timeout
    }

    /// `reading`: the caller only reads (see above).
    public func withLock<T>(reading: Bool = false, _ body: () throws -> T) throws -> T {
        var fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0, reading, [EROFS, EACCES, EPERM].contains(errno) {
            fd = open(url.path, O_RDONLY | O_CLOEXEC)
            if fd < 0, errno == ENOENT { return try body() }
        }
        guard fd >= 0 else { throw StoreError.io(url, posixError("cannot open lock file")) }
        try? StateSharing.adopt(fd, in: url.deletingLastPathComponent(), path: url)
        defer { close(fd) }  // closing the last descriptor releases the lock
        // Non-blocking attempts with a short back-off: a wedged holder gives an error, never a hang.
        let deadline = Moment.now + timeout
        var pause: UInt32 = 200
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw StoreError.io(url, posixError("flock")) }
            guard Moment.now < deadline else { throw StoreError.lockTimeout(url, seconds: timeout) }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        return try body()
    }
}
