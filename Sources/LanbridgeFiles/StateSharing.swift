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

/// Who may use a state directory besides its owner. A directory that gives its group rwx and
/// others nothing (the packaged service's /var/lib/lanbridge, 0770 lanbridge:lanbridge) is shared
/// with that group: its members run the CLI as themselves, so state files are written 0660 and
/// given the directory's group, and the control socket lets the group in. The private key stays
/// 0600 whatever the directory says.
public enum StateSharing: Sendable, Equatable {
    case ownerOnly
    case group(gid_t)

    public static func of(_ directory: URL) -> StateSharing {
        var info = stat()
        guard stat(directory.path, &info) == 0, info.st_mode & 0o077 == 0o070 else { return .ownerOnly }
        return .group(info.st_gid)
    }

    /// The mode of a state file that holds no secret.
    public var fileMode: mode_t { self == .ownerOnly ? 0o600 : 0o660 }

    /// Settles a file just opened or created in `directory` so the daemon and the group can use
    /// it: root (the CLI under sudo) gives it to the directory's owner; in a shared directory its
    /// owner makes it the directory's group and `mode`, whatever the umask did.
    public static func adopt(_ fd: Int32, in directory: URL, path: URL, mode: mode_t? = nil) throws {
        var dir = stat(), file = stat()
        guard stat(directory.path, &dir) == 0, fstat(fd, &file) == 0 else { throw StoreError.io(path, posixError("stat")) }
        let sharing = of(directory)
        let wanted = mode ?? sharing.fileMode
        if geteuid() == 0, dir.st_uid != 0 || dir.st_gid != 0, file.st_uid != dir.st_uid || file.st_gid != dir.st_gid {
            guard fchown(fd, dir.st_uid, dir.st_gid) == 0 else { throw StoreError.io(path, posixError("chown to the state directory's owner")) }
        } else if case let .group(gid) = sharing, file.st_uid == geteuid(), file.st_gid != gid {
            guard fchown(fd, uid_t.max, gid) == 0 else { throw StoreError.io(path, posixError("chgrp to the state directory's group")) }
        }
        if file.st_uid == geteuid() || geteuid() == 0, file.st_mode & 0o7777 != wanted {
            guard fchmod(fd, wanted) == 0 else { throw StoreError.io(path, posixError("chmod")) }
        }
    }

    /// A folder inside the state directory (the bridge CA's `ca/`), made if missing, and kept as
    /// the state directory is: its owner and group (root, the CLI under sudo, hands it over), 0700,
    /// or 0750 where the group shares the state (members read what is in it; only the owner writes).
    public static func folder(_ folder: URL, in directory: URL) throws {
        if mkdir(folder.path, 0o700) != 0, errno != EEXIST { throw StoreError.io(folder, posixError("mkdir")) }
        var dir = stat(), info = stat()
        guard stat(directory.path, &dir) == 0, lstat(folder.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError.io(folder, posixError("stat"))
        }
        if geteuid() == 0, info.st_uid != dir.st_uid || info.st_gid != dir.st_gid {
            guard chown(folder.path, dir.st_uid, dir.st_gid) == 0 else { throw StoreError.io(folder, posixError("chown to the state directory's owner")) }
        }
        let wanted: mode_t = of(directory) == .ownerOnly ? 0o700 : 0o750
        if info.st_mode & 0o7777 != wanted, info.st_uid == geteuid() || geteuid() == 0 {
            guard chmod(folder.path, wanted) == 0 else { throw StoreError.io(folder, posixError("chmod")) }
        }
    }

    /// Brings files written before the directory was shared (or by an older version) to the
    /// directory's sharing: run by `serve` at start, on the files it owns.
    public static func reconcile(_ directory: URL, secrets: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names {
            let path = directory.appendingPathComponent(name)
            let fd = open(path.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            try? adopt(fd, in: directory, path: path, mode: secrets.contains(name) ? 0o600 : nil)
        }
    }
}
