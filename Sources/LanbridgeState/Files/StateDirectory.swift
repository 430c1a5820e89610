import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where lanbridge keeps its identity and pairing files.
///
/// Resolution order: `--state-dir`, then `$LANBRIDGE_STATE_DIR`, then `/var/lib/lanbridge` for root,
/// then `$XDG_STATE_HOME/lanbridge` (default `~/.local/state/lanbridge`).
public struct StateDirectory: Sendable, Equatable {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    public static func resolve(override: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                               isRoot: Bool = geteuid() == 0) -> StateDirectory {
        if let override, !override.isEmpty { return StateDirectory(url: URL(fileURLWithPath: override)) }
        if let dir = environment["LANBRIDGE_STATE_DIR"], !dir.isEmpty { return StateDirectory(url: URL(fileURLWithPath: dir)) }
        if isRoot { return StateDirectory(url: URL(fileURLWithPath: "/var/lib/lanbridge")) }
        let xdg = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        return StateDirectory(url: URL(fileURLWithPath: xdg).appendingPathComponent("lanbridge"))
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Creates the directory (mode 0700) if needed.
    public func prepare() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw StoreError.io(url, "exists but is not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError.io(url, "cannot create state directory: \(error.localizedDescription)")
        }
    }

    /// The daemon must not run on a directory other users can write to (they could swap the
    /// pairing files or the identity).
    public func checkNotWritableByOthers() throws {
        var info = stat()
        guard stat(url.path, &info) == 0, info.st_mode & 0o022 != 0 else { return }
        throw StoreError.insecureDirectory(url, mode: UInt32(info.st_mode & 0o777))
    }

    /// Throws unless the directory exists (it is made by `serve`, `identity` and `invite`).
    public func requireExisting() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StoreError.missingDirectory(url)
        }
    }

    /// Nil when only the owner can read or enter the directory; otherwise what is wrong.
    public func privacyProblem() -> String? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return "does not exist" }
        let mode = info.st_mode & 0o777
        return mode & 0o077 == 0 ? nil : String(format: "mode %03o lets other users in; run chmod 700 %@", mode, url.path)
    }
}
