#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    #if canImport(FoundationEssentials)
        import FoundationEssentials
    #else
        import Foundation
    #endif
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// read(2) and write(2) by a name of our own: Foundation's `FileHandle` shadows the bare names,
/// and each C library spells its module differently.
enum SystemCalls {
    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, buffer, count)
        #else
            Darwin.write(fd, buffer, count)
        #endif
    }

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.read(fd, buffer, count)
        #else
            Darwin.read(fd, buffer, count)
        #endif
    }
}

/// What is at a path, by stat(2) (links followed).
public enum PathKind {
    /// Whether `path` is a directory; nil if nothing is there.
    public static func isDirectory(_ path: String) -> Bool? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT == S_IFDIR
    }
}

/// An error as one line for a person: the system's own words for a failed call ("Permission
/// denied"), not a debug dump of the error value.
public enum ErrorText {
    public static func describe(_ error: any Error) -> String {
        if let code = posixCode(of: error) { return String(cString: strerror(code)) }
        return "\(error)"
    }

    /// The errno behind a failed file operation, whether it came bare or wrapped by Foundation.
    public static func posixCode(of error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        if let cocoa = error as? CocoaError, let underlying = cocoa.underlying { return posixCode(of: underlying) }
        return nil
    }
}
