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

/// One daemon per state directory: `serve` holds an exclusive `flock` on `daemon.lock` for its
/// whole life and writes its PID there. A second one fails at once, naming the first, before it
/// has touched any file (runtime.json, control.sock) that belongs to the first.
public final class DaemonLock: @unchecked Sendable {
    public static let fileName = "daemon.lock"

    public struct Held: Error, CustomStringConvertible {
        public let directory: String
        public let pid: Int32?
        public var description: String {
            "another lanbridge serve\(pid.map { " (pid \($0))" } ?? "") already serves \(directory); stop it first, or use another --state-dir"
        }
    }

    private let fd: Int32

    /// Takes the lock or throws `Held`. Released when the process exits (or on `release`).
    public init(directory: StateDirectory) throws {
        let url = directory.file(Self.fileName)
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(url, posixError("cannot open")) }
        try? StateSharing.adopt(fd, in: url.deletingLastPathComponent(), path: url)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOf: url, encoding: .utf8)).flatMap { Int32($0.trimmingWhitespaceAndNewlines()) }
            close(fd)
            throw Held(directory: directory.url.path, pid: holder)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Whether a daemon holds the lock of `directory` now (the CLI asks before it expects an answer).
    public static func isHeld(in directory: StateDirectory) -> Bool {
        let fd = open(directory.file(fileName).path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }
}
