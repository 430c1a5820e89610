import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
    import Glibc
#endif

/// The daemon under systemd's `Type=notify` with a watchdog, as systemd would see it: the
/// datagrams on `$NOTIFY_SOCKET` from a real `lanbridge serve`.
@Suite(.serialized)
struct ServiceNotifyTests {
    /// A bound datagram socket standing in for systemd's notify socket.
    final class NotifySocket {
        let path: String
        let fd: Int32
        init(directory: TemporaryDirectory) throws {
            path = directory.file("notify").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
            var timeout = timeval(tv_sec: 30, tv_usec: 0)  // a hang guard, not a timing claim
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd) }

        /// The next datagram, or nil after the hang guard.
        func next() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
        }

        /// Datagrams until one satisfies `predicate`; everything seen on the way.
        func waitFor(_ predicate: (String) -> Bool) -> (found: String?, seen: [String]) {
            var seen: [String] = []
            while let message = next() {
                seen.append(message)
                if predicate(message) { return (message, seen) }
            }
            return (nil, seen)
        }
    }

    @Test func readyWatchdogReloadAndStopAreReportedToTheServiceManager() throws {
        let scratch = TemporaryDirectory("notify")
        let notify = try NotifySocket(directory: scratch)
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"], environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])

        let ready = notify.waitFor { $0.hasPrefix("READY=1") }
        #expect(ready.found?.contains("STATUS=listening on 127.0.0.1:\(bridge.port)") == true, "\(ready.seen)")
        // Pings keep coming while the daemon runs (every WATCHDOG_USEC/2).
        for _ in 0..<3 { #expect(notify.waitFor { $0 == "WATCHDOG=1" }.found != nil) }

        bridge.process.signal(SIGHUP)
        let reloading = notify.waitFor { $0.hasPrefix("RELOADING=1") }
        #expect(reloading.found?.contains("MONOTONIC_USEC=") == true, "\(reloading.seen)")
        #expect(notify.waitFor { $0.hasPrefix("READY=1") }.found != nil, "READY=1 again after the reload")

        bridge.process.signal(SIGTERM)
        #expect(notify.waitFor { $0 == "STOPPING=1" }.found != nil)
        #expect(bridge.process.wait() == 0)
    }

    @Test func withoutNotifySocketNothingIsSentAndTheDaemonRunsAsBefore() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"], environment: ["NOTIFY_SOCKET": ""])
        bridge.stop()
        #expect(bridge.process.wait() == 0)
    }
}
