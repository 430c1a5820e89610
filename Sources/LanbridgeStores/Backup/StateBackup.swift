import FoundationEssentials
import Glibc
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// `lanbridge backup` and `restore`: everything a bridge needs to be itself again on another
/// disk, so paired devices reconnect without pairing again. A backup holds the identity key: it
/// is a secret, written 0600.
public enum StateBackup {
    /// The archive's format; a restore refuses a newer one.
    public static let format = 1
    public static let manifestName = "lanbridge-backup.json"

    /// What a backup holds, and which files are secrets (0600 when restored). Not what describes a
    /// running process (runtime.json, daemon.lock, control.sock, store.lock).
    public static let files: [(name: String, secret: Bool)] = [
        (IdentityStore.fileName, true), (IdentityStore.publicFileName, false),
        (PairingStore.pairedFileName, false), (PairingStore.pendingFileName, false), (PairingStore.invitesFileName, false),
        (AuditLog.fileName, false), (AuditLog.headFileName, false), (BridgeSettings.fileName, false),
        (PushTokens.fileName, true), (OpenClawDevices.fileName, true),
        ("canvas-tls.pem", true),  // CanvasCertificate.fileName: the door certificate OpenClaw's apps pinned
    ]

    public struct Manifest: Codable, Equatable, Sendable {
        public struct File: Codable, Equatable, Sendable {
            public var name: String
            public var size: Int
            public var sha256: String
        }
        public var format: Int
        public var lanbridge: String
        public var created: Date
        public var files: [File]
    }

    public enum Failure: Error, CustomStringConvertible {
        /// Nothing to back up.
        case noIdentity(String)
        /// The archive is not a whole lanbridge backup, or not one this lanbridge can read.
        case refused(String)
        /// A daemon runs on the target: it would overwrite what is restored.
        case daemonRunning(String)
        /// The target already holds a bridge.
        case targetHoldsState(String)

        public var description: String {
            switch self {
            case let .noIdentity(path): "\(path) holds no bridge identity (identity.key): nothing to back up"
            case let .refused(reason): "not restored, nothing written: \(reason)"
            case let .daemonRunning(path): "a daemon runs on \(path): stop it first (systemctl stop lanbridge), then restore"
            case let .targetHoldsState(path):
                "\(path) already holds a bridge (identity.key): restoring would replace it and its pairings; pass --replace if that is what you want"
            }
        }
    }

    /// A consistent snapshot, taken under the store's lock (no pairing is half written in it).
    public static func make(directory: StateDirectory, lanbridge: String, now: Date = Date()) throws -> (archive: [UInt8], manifest: Manifest) {
        let store = PairingStore(directory: directory)
        let found: [BackupArchive.Entry] = try store.withLock {
            files.compactMap { file in
                (try? Data(contentsOf: directory.file(file.name))).map { BackupArchive.Entry(name: file.name, bytes: Array($0)) }
            }
        }
        guard found.contains(where: { $0.name == IdentityStore.fileName }) else { throw Failure.noIdentity(directory.url.path) }
        let manifest = Manifest(
            format: format, lanbridge: lanbridge, created: now,
            files: found.map { .init(name: $0.name, size: $0.bytes.count, sha256: Hex.encode(SHA256.hash($0.bytes))) })
        let entries = [BackupArchive.Entry(name: manifestName, bytes: try StateJSON.encode(manifest))] + found
        return (BackupArchive.write(entries, modified: Int(now.timeIntervalSince1970)), manifest)
    }

    /// Reads and checks a whole backup without writing anything where it would go: the archive,
    /// the manifest (format, every file's size and hash), then each file as lanbridge would open it
    /// (in a scratch directory: the identity, the store, the config, the audit chain).
    public static func check(_ bytes: [UInt8]) throws -> (manifest: Manifest, entries: [BackupArchive.Entry]) {
        let entries: [BackupArchive.Entry]
        do { entries = try BackupArchive.read(bytes) } catch { throw Failure.refused(error.description) }
        guard let first = entries.first, first.name == manifestName else { throw Failure.refused("it does not start with \(manifestName): not a lanbridge backup") }
        guard let manifest = try? LanbridgeJSON.decoder.decode(Manifest.self, from: Data(first.bytes)) else {
            throw Failure.refused("\(manifestName) is unreadable")
        }
        guard manifest.format <= format else {
            throw Failure.refused(
                "it was made by lanbridge \(manifest.lanbridge) in backup format \(manifest.format); this lanbridge reads format \(format): restore it with that version or newer")
        }
        let files = Array(entries.dropFirst())
        let allowed = Set(Self.files.map(\.name))
        for entry in files {
            guard allowed.contains(entry.name) else { throw Failure.refused("\(entry.name) is not a file a bridge keeps") }
            guard let listed = manifest.files.first(where: { $0.name == entry.name }), listed.size == entry.bytes.count,
                listed.sha256 == Hex.encode(SHA256.hash(entry.bytes))
            else { throw Failure.refused("\(entry.name) is not what the manifest says (damaged?)") }
        }
        guard Set(files.map(\.name)) == Set(manifest.files.map(\.name)) else { throw Failure.refused("files the manifest lists are missing") }
        guard files.contains(where: { $0.name == IdentityStore.fileName }) else { throw Failure.refused("it holds no identity.key") }

        // Opened as lanbridge opens them, in a private scratch directory.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("lanbridge-restore-\(Hex.encode(SecureRandom.bytes(8)))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = StateDirectory(url: scratch)
        for entry in files { try AtomicFile.write(entry.bytes, to: directory.file(entry.name), mode: 0o600, durable: false) }
        do {
            guard try IdentityStore(directory: directory).load() != nil else { throw Failure.refused("identity.key is unreadable") }
            _ = try PairingStore(directory: directory).read()
            if files.contains(where: { $0.name == BridgeSettings.fileName }) { _ = try BridgeSettings.load(directory: directory) }
            let audit = try AuditLog(directory: directory).verify()
            guard audit.brokenAt.isEmpty, audit.truncated == nil else { throw Failure.refused("its audit log does not verify (\(audit))") }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.refused("\(error)")
        }
        return (manifest, files)
    }

    /// Checks the whole backup, then writes it into `directory`: refused while a daemon runs there,
    /// and over an existing bridge unless `replace`.
    public static func restore(_ bytes: [UInt8], into directory: StateDirectory, replace: Bool) throws -> Manifest {
        let (manifest, entries) = try check(bytes)
        if DaemonLock.isHeld(in: directory) { throw Failure.daemonRunning(directory.url.path) }
        if FileManager.default.fileExists(atPath: directory.file(IdentityStore.fileName).path), !replace {
            throw Failure.targetHoldsState(directory.url.path)
        }
        try directory.prepare()
        let restored = Set(entries.map(\.name))
        // What the backup does not hold must not linger from the bridge it replaces.
        for file in files where !restored.contains(file.name) { unlink(directory.file(file.name).path) }
        let secret = Dictionary(uniqueKeysWithValues: files.map { ($0.name, $0.secret) })
        // The identity last: a restore cut short leaves no key beside another bridge's pairings.
        let identityLast = entries.filter { $0.name != IdentityStore.fileName } + entries.filter { $0.name == IdentityStore.fileName }
        for entry in identityLast {
            try AtomicFile.write(entry.bytes, to: directory.file(entry.name), mode: secret[entry.name] == true ? 0o600 : nil)
        }
        return manifest
    }
}
