import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// Waits for a file to be created (or renamed into place) in a directory, via inotify: an event,
/// not a polling loop.
public final class DirectoryWatcher {
    private let fd: Int32

    public init(_ directory: URL) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, directory.path, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// Returns the name of the first created entry whose name has `prefix`, or nil after `timeout`.
    public func waitForCreation(prefix: String, timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, remaining) > 0 else { return nil }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return nil }
            var offset = 0
            while offset + 16 <= n {
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[]; }
                let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8 | Int(buffer[offset + 14]) << 16 | Int(buffer[offset + 15]) << 24
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                if name.hasPrefix(prefix) { return name }
                offset += 16 + length
            }
        }
    }

    /// Checks `condition` now and after every entry created or renamed into place, until it holds
    /// (true) or `timeout` passes (false). Create the watcher before what you wait for can happen.
    public func wait(timeout: TimeInterval, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard deadline.timeIntervalSinceNow > 0, waitForCreation(prefix: "", timeout: deadline.timeIntervalSinceNow) != nil else { return condition() }
        }
        return true
    }

    deinit { close(fd) }
}
