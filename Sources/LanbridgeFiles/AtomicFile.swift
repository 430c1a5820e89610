#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whole-file replacement that a crash cannot tear: write a temporary file in the same directory,
/// fsync it, rename it over the target, then fsync the directory so the rename itself is durable.
public enum AtomicFile {
    static let temporaryMarker = ".tmp."

    /// With `durable: false` nothing is fsynced: readers still see the old or the new file whole,
    /// but a power cut may lose the change (for files that describe only the running process).
    /// `mode` nil: what the directory's `StateSharing` gives a file that holds no secret.
    public static func write(_ bytes: some ContiguousByteStorage, to url: URL, mode: mode_t? = nil, durable: Bool = true) throws {
        let temporary = try writeSyncedTemporary(bytes, for: url, mode: mode, sync: durable)
        guard rename(temporary.path, url.path) == 0 else {
            let reason = posixError("rename")
            unlink(temporary.path)
            throw StoreError.io(url, reason)
        }
        if durable { try syncDirectory(url.deletingLastPathComponent()) }
    }

    /// Puts `url` back as it was before a change that failed: `bytes`, or no file when nil. A file
    /// that holds `bytes` already is not written again.
    public static func restore(_ bytes: Data?, at url: URL) throws {
        if let bytes {
            if (try? Data(contentsOf: url)) != bytes { try write(Array(bytes), to: url) }
        } else if unlink(url.path) != 0, errno != ENOENT {
            throw StoreError.io(url, posixError("remove"))
        }
    }

    /// Creates `url` only if it does not exist yet; returns false if someone else created it first.
    /// The content is complete before the name appears (link(2) of a synced temporary file).
    public static func create(_ bytes: some ContiguousByteStorage, at url: URL, mode: mode_t? = nil) throws -> Bool {
        let temporary = try writeSyncedTemporary(bytes, for: url, mode: mode)
        defer { unlink(temporary.path) }
        guard link(temporary.path, url.path) == 0 else {
            if errno == EEXIST { return false }
            throw StoreError.io(url, posixError("link"))
        }
        try syncDirectory(url.deletingLastPathComponent())
        return true
    }

    /// A new file beside `url` holding `bytes`, already fsynced; removed again on failure.
    private static func writeSyncedTemporary(_ bytes: some ContiguousByteStorage, for url: URL, mode: mode_t?, sync: Bool = true) throws -> URL {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(
            "." + url.lastPathComponent + temporaryMarker + "\(getpid()).\(UInt32.random(in: 0...UInt32.max))")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(temporary, posixError("cannot create")) }
        defer { close(fd) }
        do {
            try bytes.withUnsafeBytes { try writeAll(fd, $0, url: temporary) }
            // Owner, group and mode before the name appears (and whatever the umask did).
            try StateSharing.adopt(fd, in: url.deletingLastPathComponent(), path: temporary, mode: mode)
            guard !sync || fsync(fd) == 0 else { throw StoreError.io(temporary, posixError("sync")) }
        } catch {
            unlink(temporary.path)
            throw error
        }
        return temporary
    }

    /// Removes temporaries left by writers that died mid-write. Call only while holding the store lock.
    public static func removeStaleTemporaries(in directory: URL, for names: [String]) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for entry in entries where names.contains(where: { entry.hasPrefix("." + $0 + temporaryMarker) }) {
            unlink(directory.appendingPathComponent(entry).path)
        }
    }

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, url: URL) throws {
        var offset = 0
        while offset < buffer.count {
            let n = SystemCalls.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(url, posixError("write"))
            }
            offset += n
        }
    }

    private static func syncDirectory(_ directory: URL) throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.io(directory, posixError("open directory")) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StoreError.io(directory, posixError("fsync directory")) }
    }
}
