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
import LanbridgeProtocol

/// Errors from the state directory. Each names the file and says what to do.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The file exists but cannot be understood. It is never replaced silently.
    case corrupt(URL, String)
    /// The file is in a format a newer lanbridge wrote (StateFormat). Never rewritten.
    case newerFormat(URL, String)
    case insecurePermissions(URL, mode: UInt32)
    /// The state directory does not exist (a mistyped --state-dir, or no daemon has run yet).
    case missingDirectory(URL)
    /// The state directory lets other users write to it.
    case insecureDirectory(URL, mode: UInt32)
    case io(URL, String)
    case lockTimeout(URL, seconds: Double)
    /// A change that failed and was undone: nothing of it landed, and nothing will.
    case notMade(String, String)
    /// A change that failed and could not be undone either: it is written ahead and completes the
    /// next time the store is opened with the directory writable.
    case deferred(String, String, undo: String)

    /// Why a write failed, when the file system refused it (issue 61 §1: the daemon keeps serving
    /// and looks again later), in the words `status` and `/healthz` use; nil for anything else
    /// (a file that cannot be understood, a lock held too long, a refusal of the store's own).
    public var unwritableReason: String? {
        let reason: String
        switch self {
        case let .io(_, text), let .notMade(_, text), let .deferred(_, text, _): reason = text
        default: return nil
        }
        return Self.writeErrors.first { reason.contains(String(cString: strerror($0))) }.flatMap { Self.unwritable(errno: $0) }
    }

    /// The file system's refusals of a write, in the order they are looked for.
    static let writeErrors = [EROFS, ENOSPC, EDQUOT, EPERM, EACCES]

    /// A refusal of a write, said as `status` says it; nil for an errno that is not one.
    public static func unwritable(errno code: Int32) -> String? {
        switch code {
        case EROFS: "read-only file system"
        case ENOSPC: "no space left on device"
        case EDQUOT: "disk quota exceeded"
        case EPERM: "a file is immutable or not ours (operation not permitted)"
        case EACCES: "permission denied"
        default: nil
        }
    }

    /// The file cannot be understood (as opposed to read or written).
    public var isCorrupt: Bool {
        switch self {
        case .corrupt, .newerFormat: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .corrupt(url, problem):
            "\(url.path) is corrupt: \(problem). It was left untouched; repair it or move it aside, then retry."
        case let .newerFormat(url, problem):
            "\(url.path): \(problem)"
        case let .insecurePermissions(url, mode):
            "\(url.path) has mode \(NumberText.octalMode(mode)); it must be readable by its owner only (chmod 600 \(url.path))"
        case let .missingDirectory(url):
            "there is no lanbridge state at \(url.path): check --state-dir (or $LANBRIDGE_STATE_DIR); `lanbridge serve` or `lanbridge identity` creates it"
        case let .insecureDirectory(url, mode):
            "\(url.path) has mode \(NumberText.octalMode(mode)): other users could replace the pairing files in it; refusing to serve from it (chmod 700 \(url.path))"
        case let .io(url, problem):
            "\(url.path): \(problem)"
        case let .lockTimeout(url, seconds):
            "\(url.path) stayed locked by another lanbridge process for \(Int(seconds)) s"
        case let .notMade(change, reason):
            "not done: \(change): \(reason). Nothing was changed, and nothing will be: retry once the state directory can be written"
        case let .deferred(change, reason, undo):
            "not done yet: \(change): \(reason); it could not be undone either (\(undo)), so it is written ahead and takes effect the next time lanbridge opens the store with the state directory writable"
        }
    }
}

/// `errno` as text, for I/O errors.
package func posixError(_ what: String) -> String {
    "\(what): \(String(cString: strerror(errno)))"
}
