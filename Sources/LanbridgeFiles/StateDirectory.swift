#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeProtocol
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where lanbridge keeps its identity and pairing files.
///
/// Resolution order: `--state-dir`, then `$LANBRIDGE_STATE_DIR`, then `/var/lib/lanbridge` for root
/// and for members of its group (the packaged service's state), then `$XDG_STATE_HOME/lanbridge`
/// (default `~/.local/state/lanbridge`).
public struct StateDirectory: Sendable, Equatable {
    public static let system = "/var/lib/lanbridge"

    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    public static func resolve(
        override: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
        isRoot: Bool = geteuid() == 0, system: String = system
    ) -> StateDirectory {
        if let override, !override.isEmpty { return StateDirectory(url: URL(fileURLWithPath: override)) }
        if let dir = environment["LANBRIDGE_STATE_DIR"], !dir.isEmpty { return StateDirectory(url: URL(fileURLWithPath: dir)) }
        if isRoot || access(system, R_OK | W_OK | X_OK) == 0 { return StateDirectory(url: URL(fileURLWithPath: system)) }
        let xdg =
            environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.local/state"
        return StateDirectory(url: URL(fileURLWithPath: xdg).appendingPathComponent("lanbridge"))
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Why the pairing store cannot be written here now, or nil when it can (issue 61 §1): a file
    /// system mounted read-only (as the kernel remounts an SD card after an error), a full disk,
    /// an immutable file among `files`, or no write permission. It writes and removes one small
    /// file, and reads the others' flags: nothing of the store is touched.
    public func writeProblem(files: [String]) -> String? {
        if isMountedReadOnly { return StoreError.unwritable(errno: EROFS) }
        for name in files {
            let fd = open(file(name).path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var flags: Int = 0
            let immutable = ioctl(fd, 0x8008_6601 /* FS_IOC_GETFLAGS */, &flags) == 0 && flags & 0x10 /* FS_IMMUTABLE_FL */ != 0
            close(fd)
            if immutable { return "\(name) is immutable (chattr -i)" }
        }
        let probe = file(".write-probe.\(getpid())")
        let fd = open(probe.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return StoreError.unwritable(errno: errno) ?? String(cString: strerror(errno)) }
        defer { close(fd); unlink(probe.path) }
        // A byte that must reach the disk: a full one refuses it here.
        var byte: UInt8 = 0
        guard write(fd, &byte, 1) == 1, fsync(fd) == 0 else { return StoreError.unwritable(errno: errno) ?? String(cString: strerror(errno)) }
        return nil
    }

    /// The directory's file system is mounted read-only: what a reader can see without writing.
    public var isMountedReadOnly: Bool {
        var fs = statvfs()
        return statvfs(url.path, &fs) == 0 && fs.f_flag & UInt(ST_RDONLY) != 0
    }

    /// Creates the directory (mode 0700) if needed.
    public func prepare() throws {
        if let isDirectory = PathKind.isDirectory(url.path) {
            guard isDirectory else { throw StoreError.io(url, "exists but is not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError.io(url, "cannot create state directory: \(ErrorText.describe(error))")
        }
    }

    /// The daemon must not run on a directory other users can write to (they could swap the
    /// pairing files or the identity). Its group may write when the directory is shared with it
    /// (`StateSharing`) and the group is the daemon's own (the service's `lanbridge`), or the
    /// daemon is root (`sudo lanbridge serve` on the service's state): its members are the
    /// bridge's operators.
    public func checkNotWritableByOthers() throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return }
        let groupTrusted = (info.st_gid == getegid() || geteuid() == 0) && StateSharing.of(url) != .ownerOnly
        guard info.st_mode & 0o002 != 0 || (info.st_mode & 0o020 != 0 && !groupTrusted) else { return }
        throw StoreError.insecureDirectory(url, mode: UInt32(info.st_mode & 0o777))
    }

    /// Throws unless the directory exists (it is made by `serve`, `identity` and `invite`).
    public func requireExisting() throws {
        guard PathKind.isDirectory(url.path) == true else {
            throw StoreError.missingDirectory(url)
        }
    }

    /// Nil when only the owner (and, in a shared directory, its group) can read or enter the
    /// directory; otherwise what is wrong.
    public func privacyProblem() -> String? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return "does not exist" }
        let mode = info.st_mode & 0o777
        if mode & 0o007 != 0 { return "mode \(NumberText.octalMode(mode)) lets other users in; run chmod o-rwx \(url.path)" }
        if mode & 0o070 != 0, StateSharing.of(url) == .ownerOnly {
            return "mode \(NumberText.octalMode(mode)) lets its group in part way; run chmod 700 \(url.path) (private) or chmod 770 \(url.path) (shared with the group)"
        }
        return nil
    }

    /// How the directory is shared, in words (doctor, status).
    public var sharingDescription: String {
        switch StateSharing.of(url) {
        case .ownerOnly: return "private to its owner"
        case let .group(gid): return "shared with group \(getgrgid(gid).map { String(cString: $0.pointee.gr_name) } ?? String(gid))"
        }
    }
}
