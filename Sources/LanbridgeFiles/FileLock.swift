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

/// An exclusive `flock` on a lock file, shared by every lanbridge process using one state directory
/// (the daemon and each CLI invocation). Each acquisition opens its own file description, so threads
/// in one process exclude each other too.
public struct FileLock: Sendable {
    public let url: URL
    public let timeout: Double

    public init(url: URL, timeout: Double = 10) {
        self.url = url
        self.timeout = timeout
    }

    public func withLock<T>(_ body: () throws -> T) throws -> T {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(url, posixError("cannot open lock file")) }
        try? StateSharing.adopt(fd, in: url.deletingLastPathComponent(), path: url)
        defer { close(fd) }  // closing the last descriptor releases the lock
        // Non-blocking attempts with a short back-off: a wedged holder gives an error, never a hang.
        let deadline = Date().addingTimeInterval(timeout)
        var pause: UInt32 = 200
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw StoreError.io(url, posixError("flock")) }
            guard Date() < deadline else { throw StoreError.lockTimeout(url, seconds: timeout) }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        return try body()
    }
}
