import FoundationEssentials
import NIOCore
import Glibc

/// systemd's notify protocol (sd_notify(3)) without libsystemd: each state change is one datagram
/// of `KEY=value` lines to the Unix socket in `$NOTIFY_SOCKET` (a leading `@` names an abstract
/// socket). Absent when the daemon does not run under `Type=notify`; sending never blocks and a
/// failure is ignored, as sd_notify's callers do.
public final class ServiceNotifier: Sendable {
    private let socketPath: String
    private let fd: Int32
    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, if the watchdog is on for this process.
    public let watchdogInterval: TimeAmount?

    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
            path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        (socketPath, self.fd) = (path, fd)
        // WATCHDOG_PID, when set, names the process the watchdog is for (not a child of ours).
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0 {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    deinit { close(fd) }

    /// The daemon listens and serves.
    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// A reload starts; `ready(status:)` ends it. MONOTONIC_USEC lets systemd tell this reload from an earlier one.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
    }

    public func stopping() { send("STOPPING=1") }

    public func watchdog() { send("WATCHDOG=1") }

    public func send(_ message: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if bytes.first == UInt8(ascii: "@") { raw[0] = 0 }  // abstract namespace
        }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        var payload = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, &payload, payload.count, Int32(MSG_NOSIGNAL), $0, length)
            }
        }
    }
}
