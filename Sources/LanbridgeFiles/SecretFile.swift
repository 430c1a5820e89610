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

/// Reads a file that holds a secret (identity.key, the gateway token): a regular file, not a
/// symlink, readable by its owner only, read straight into wiped memory.
public enum SecretFile {
    /// Nil if the file does not exist.
    public static func read(_ url: URL, maxLength: Int) throws -> SecureBytes? {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StoreError.io(url, posixError("cannot open"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.io(url, posixError("stat")) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError.corrupt(url, "not a regular file") }
        guard info.st_mode & 0o077 == 0 else { throw StoreError.insecurePermissions(url, mode: UInt32(info.st_mode & 0o777)) }
        guard Int(info.st_size) <= maxLength else { throw StoreError.corrupt(url, "larger than \(maxLength) bytes") }
        return try SecureBytes(count: Int(info.st_size)) { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = SystemCalls.read(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw StoreError.io(url, posixError("read")) }
                offset += n
            }
        }
    }
}
