import FoundationEssentials
import Glibc
import LanbridgeFiles
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// paired.json and pending.json in the state directory, shared by the daemon and the CLI.
///
/// Every read and every update holds an exclusive `flock` on `store.lock`; updates rewrite only the
/// files that changed, each atomically (temp file, fsync, rename, fsync directory) with mode 0600.
/// A file that cannot be understood stops the store with an error naming the file: it is never
/// replaced, so a hand-edit gone wrong cannot cost a pairing.
///
/// A read never writes (issue 61 §1): on a read-only or full state directory it still answers,
/// with a change written ahead and not yet applied (`store.journal`) laid over the files in
/// memory. A change that fails is undone before the failure is reported, so a write reported as
/// failed never takes effect later; one that cannot even be undone is reported as such.
public struct PairingStore: Sendable {
    public static let pairedFileName = "paired.json"
    public static let pendingFileName = "pending.json"
    public static let invitesFileName = "invites.json"
    public static let lockFileName = "store.lock"
    /// A change being made: written (atomically) before anything else, removed when done.
    public static let journalFileName = "store.journal"

    public let directory: StateDirectory
    public let audit: AuditLog
    /// The formats it reads and writes (`StateFormat.current`; a test may pass a newer one).
    public let formats: StateFormat
    private let lock: FileLock
    /// Told how many audit entries each change wrote (the daemon counts them in its metrics).
    private let appended: (@Sendable (Int) -> Void)?
    /// What lifetimes are counted on (`Lifetimes`).
    private let clock: StoreClock

    public init(
        directory: StateDirectory, lockTimeout: Double = 10, formats: StateFormat = .current, clock: StoreClock = .system,
        appended: (@Sendable (Int) -> Void)? = nil
    ) {
        self.directory = directory
        self.formats = formats
        self.clock = clock
        lock = FileLock(url: directory.file(Self.lockFileName), timeout: lockTimeout)
        audit = AuditLog(directory: directory)
        self.appended = appended
    }

    public var pairedURL: URL { directory.file(Self.pairedFileName) }
    public var pendingURL: URL { directory.file(Self.pendingFileName) }
    public var invitesURL: URL { directory.file(Self.invitesFileName) }

    /// Changes whenever paired.json is replaced (every write is a rename): one `stat`, so the daemon
    /// can check before each invoke that the rules it holds are the ones on disk.
    public func pairedFileVersion() -> String { Self.version(of: pairedURL) }

    /// The same, for a caller that keeps the path (the bridge asks before each decision).
    public static func version(ofFile path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "absent" }
        return "\(info.st_ino):\(info.st_mtim.tv_sec):\(info.st_mtim.tv_nsec):\(info.st_size)"
    }

    public func invitesFileVersion() -> String { Self.version(of: invitesURL) }

    static func version(of url: URL) -> String { version(ofFile: url.path) }

    /// invites.json alone, without the lock: every write is an atomic rename, so a reader always
    /// sees a whole file. For the handshake path, which must never wait for a lock.
    public func readInvitesWithoutLock() throws -> InvitesFile {
        var invites = try decode(InvitesFile.self, from: invitesURL, as: .invites).value ?? InvitesFile()
        let (wall, boot) = clock.read()
        invites.rebase(wall: wall, boot: boot)
        return invites
    }

    /// A consistent snapshot of both files. A state directory that does not exist is an error,
    /// never created here: reading must not leave a directory behind a mistyped --state-dir.
    /// A crash's journal is redone if it can be; if the directory cannot be written, the read
    /// lays it over the files instead, and leaves it for a writer.
    public func read() throws -> PairingState {
        try directory.requireExisting()
        return try lock.withLock(reading: true) {
            var overlay: Journal?
            do { try recover() } catch let error as StoreError where !error.isCorrupt {
                overlay = try pendingJournal()
            }
            try audit.checkFormat(formats)
            let (wall, boot) = clock.read()
            return try load(overlay: overlay, wall: wall, boot: boot).state
        }
    }

    /// Runs `body` under the store's lock, after a crash's journal is redone: no change is half
    /// written meanwhile (`lanbridge backup` copies the files here).
    public func withLock<T>(_ body: () throws -> T) throws -> T {
        try directory.requireExisting()
        return try lock.withLock {
            try recover()
            return try body()
        }
    }

    /// Loads, lets `body` change the state, writes back what changed and records it in the audit
    /// log as `actor`. If `body` throws, nothing is written.
    public func update<T>(actor: String = AuditLog.currentUser, _ body: (inout PairingState) throws -> T) throws -> T {
        try change(actor: actor, body).result
    }

    /// Writes back, in the current format, any file an older lanbridge wrote, with one audit line
    /// for each (the daemon calls it as it starts); returns what it migrated, as
    /// "paired.json format 1 → 2". A reader without it migrates in memory only.
    @discardableResult
    public func migrate(actor: String = AuditLog.currentUser) throws -> [String] {
        try change(actor: actor) { _ in }.migrated.map(\.description)
    }

    private func change<T>(actor: String, _ body: (inout PairingState) throws -> T) throws -> (result: T, migrated: [Migrated]) {
        try directory.requireExisting()
        // A directory that takes no writes refuses even the lock file: say it as the failed change it is.
        if access(directory.file(Self.lockFileName).path, W_OK) != 0, [EROFS, EPERM].contains(errno) {
            throw StoreError.notMade("the change", "\(directory.url.path): \(String(cString: strerror(errno)))")
        }
        return try lock.withLock {
            AtomicFile.removeStaleTemporaries(in: directory.url, for: [Self.pairedFileName, Self.pendingFileName, Self.invitesFileName, Self.journalFileName])
            try recover()
            try audit.checkFormat(formats)
            let (wall, boot) = clock.read()
            let (before, migrated) = try load(wall: wall, boot: boot)
            var state = before
            let result = try body(&state)
            state.anchor(wall: wall, boot: boot)
            state.paired.version = formats.version(.paired)
            state.pending.version = formats.version(.pending)
            state.invites.version = formats.version(.invites)
            let stale = Set(migrated.map(\.file))
            // invites.json first (a crash after it loses an invite, never reuses one), then
            // paired.json, then pending.json; the journal makes the set all-or-nothing anyway, and
            // carries a migration whole too: the old file or the new one, never a mix.
            var files: [Journal.File] = []
            if state.invites != before.invites || stale.contains(.invites) {
                files.append(.init(name: Self.invitesFileName, bytes: try StateJSON.encode(state.invites)))
            }
            if state.paired != before.paired || stale.contains(.paired) {
                files.append(.init(name: Self.pairedFileName, bytes: try StateJSON.encode(state.paired)))
            }
            if state.pending != before.pending || stale.contains(.pending) {
                files.append(.init(name: Self.pendingFileName, bytes: try StateJSON.encode(state.pending)))
            }
            let now = Date()
            let entries =
                migrated.map { AuditEntry(time: now, event: "state.migrated", actor: actor, detail: $0.description) }
                + AuditEntry.changes(from: before, to: state, actor: actor, now: now)
            guard !files.isEmpty || !entries.isEmpty else { return (result, migrated) }
            try commit(Journal(tx: Hex.encode(SecureRandom.bytes(8)), files: files, audit: entries), before: before)
            return (result, migrated)
        }
    }

    /// A file opened in an older format and migrated in memory, to be written back by an update.
    struct Migrated: CustomStringConvertible {
        var file: StateFormat.File
        var from: Int, to: Int
        var description: String { "\(file.rawValue) format \(from) → \(to)" }
    }

    /// A store change, whole: the new contents of the files it replaces and its audit entries.
    struct Journal: Codable {
        struct File: Codable {
            var name: String
            var bytes: Data  // base64 in the journal
            init(name: String, bytes: [UInt8]) { (self.name, self.bytes) = (name, Data(bytes)) }
        }
        var tx: String
        var files: [File]
        var audit: [AuditEntry]
    }

    private var journalURL: URL { directory.file(Self.journalFileName) }

    /// Write-ahead: the journal first, then the audit entries, then the files. A process killed at
    /// any moment leaves either no journal (nothing happened) or a whole one, which the next open
    /// redoes (`recover`): no change lands without its audit entries, and none is half-applied.
    ///
    /// A failure this process sees (a full disk, a read-only or immutable file) is undone before it
    /// is reported: the files already replaced are put back, the audit log is cut back to where it
    /// was, and the journal goes, so nothing of the change can land later (issue 61 §1: an approval
    /// reported as failed was applied when its journal was redone after `chattr -i`). If even that
    /// cannot be done, the journal stays and the error says the change completes later.
    private func commit(_ journal: Journal, before: PairingState) throws {
        let change = Self.describe(journal)
        do {
            try AtomicFile.write(Array(try LanbridgeJSON.compact.encode(journal)), to: journalURL)
        } catch {
            unlink(journalURL.path)  // a torn temporary is removed by the write itself
            throw StoreError.notMade(change, "\(error)")
        }
        let mark = audit.mark()
        let previous = journal.files.map { (name: $0.name, bytes: try? Data(contentsOf: directory.file($0.name))) }
        do {
            try apply(journal)
        } catch {
            do { try undo(files: previous, audit: mark) } catch let undo { throw StoreError.deferred(change, "\(error)", undo: "\(undo)") }
            throw StoreError.notMade(change, "\(error)")
        }
        unlink(journalURL.path)
        if !journal.audit.isEmpty { appended?(journal.audit.count) }
    }

    /// Puts back the files a failed change replaced and the audit log it appended to, then removes
    /// its journal: nothing of it is left to land later.
    private func undo(files previous: [(name: String, bytes: Data?)], audit mark: AuditLog.Mark) throws {
        for (name, bytes) in previous { try AtomicFile.restore(bytes, at: directory.file(name)) }
        try audit.rewind(to: mark)
        guard unlink(journalURL.path) == 0 || errno == ENOENT else { throw StoreError.io(journalURL, posixError("remove")) }
    }

    /// What a change was, from its audit entries: "pairing.approved 38HA-…, pairing.request-removed …".
    static func describe(_ journal: Journal) -> String {
        let parts = journal.audit.filter { $0.event != "state.migrated" }.map { [$0.event, $0.nodeId ?? $0.requestId].compactMap { $0 }.joined(separator: " ") }
        if !parts.isEmpty { return parts.prefix(3).joined(separator: ", ") + (parts.count > 3 ? " and \(parts.count - 3) more" : "") }
        return "a rewrite of " + journal.files.map(\.name).joined(separator: ", ")
    }

    /// The journal of a change written ahead and not yet applied, if any.
    private func pendingJournal() throws -> Journal? {
        guard let data = try? Data(contentsOf: journalURL) else { return nil }
        do { return try LanbridgeJSON.decoder.decode(Journal.self, from: data) } catch {
            throw StoreError.corrupt(journalURL, "an interrupted change cannot be read (\(error)); move the file aside to go on without it")
        }
    }

    private func apply(_ journal: Journal) throws {
        try audit.append(journal.audit, tx: journal.tx)
        for file in journal.files where [Self.pairedFileName, Self.pendingFileName, Self.invitesFileName].contains(file.name) {
            let url = directory.file(file.name)
            if (try? Data(contentsOf: url)) != file.bytes { try AtomicFile.write(Array(file.bytes), to: url) }
        }
    }

    /// Completes a change whose writer died after writing its journal. Call with the lock held.
    private func recover() throws {
        guard let journal = try pendingJournal() else { return }
        try apply(journal)
        unlink(journalURL.path)
    }

    /// Appends audit entries that no state change implies (a denied command), under the store lock.
    public func record(_ entries: [AuditEntry]) throws {
        try directory.requireExisting()
        try lock.withLock { try audit.append(entries) }
    }

    // MARK: - Loading and validation

    /// The files as they are, or with `overlay`'s new contents in place of theirs; every lifetime
    /// put on `wall`'s timeline by the boot clock (`Lifetimes`).
    private func load(overlay: Journal? = nil, wall: Date, boot: BootInstant) throws -> (state: PairingState, migrated: [Migrated]) {
        let replaced = Dictionary((overlay?.files ?? []).map { ($0.name, $0.bytes) }) { $1 }
        let paired = try decode(PairedFile.self, from: pairedURL, as: .paired, replaced: replaced[Self.pairedFileName])
        let pending = try decode(PendingFile.self, from: pendingURL, as: .pending, replaced: replaced[Self.pendingFileName])
        let invites = try decode(InvitesFile.self, from: invitesURL, as: .invites, replaced: replaced[Self.invitesFileName])
        var state = PairingState(paired: paired.value ?? PairedFile(), pending: pending.value ?? PendingFile(), invites: invites.value ?? InvitesFile())
        try validate(state.paired)
        try validate(state.pending)
        let pairedKeys = Set(state.paired.nodes.map(\.publicKey))
        state.pending.requests.removeAll { pairedKeys.contains($0.publicKey) }
        state.rebase(wall: wall, boot: boot)
        return (state, [paired.migrated, pending.migrated, invites.migrated].compactMap { $0 })
    }

    private func decode<T: Decodable>(_ type: T.Type, from url: URL, as file: StateFormat.File, replaced: Data? = nil) throws -> (
        value: T?, migrated: Migrated?
    ) {
        var data: Data
        do {
            data = try replaced ?? Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return (nil, nil)
        } catch {
            throw StoreError.io(url, "cannot read: \(ErrorText.describe(error))")
        }
        guard !data.isEmpty else { throw StoreError.corrupt(url, "the file is empty") }
        // A newer file is refused, never rewritten: the store fails closed and a downgraded
        // daemon does not start on it. An older one is read as migrated.
        let opened = try formats.bytes(data, as: file, url: url)
        data = opened.bytes
        let migrated = opened.migrated.map { Migrated(file: file, from: $0.from, to: $0.to) }
        do {
            return (try LanbridgeJSON.decoder.decode(T.self, from: data), migrated)
        } catch let error as DecodingError {
            throw StoreError.corrupt(url, Self.explain(error))
        } catch {
            throw StoreError.corrupt(url, "\(error)")
        }
    }

    private func validate(_ file: PairedFile) throws {
        var keys = Set<PublicKey>()
        for (i, node) in file.nodes.enumerated() {
            guard node.nodeId == node.publicKey.fingerprint else {
                throw StoreError.corrupt(pairedURL, "nodes[\(i)].nodeId \(node.nodeId) does not match its publicKey (which gives \(node.publicKey.fingerprint))")
            }
            guard keys.insert(node.publicKey).inserted else {
                throw StoreError.corrupt(pairedURL, "nodes[\(i)] repeats node \(node.nodeId)")
            }
        }
    }

    private func validate(_ file: PendingFile) throws {
        var keys = Set<PublicKey>(), ids = Set<String>()
        for (i, request) in file.requests.enumerated() {
            guard request.nodeId == request.publicKey.fingerprint else {
                throw StoreError.corrupt(pendingURL, "requests[\(i)].nodeId does not match its publicKey")
            }
            guard keys.insert(request.publicKey).inserted, ids.insert(request.requestId).inserted else {
                throw StoreError.corrupt(pendingURL, "requests[\(i)] repeats request \(request.requestId) or node \(request.nodeId)")
            }
        }
    }

    // MARK: - JSON

    /// "nodes[2].publicKey: expected base64 of a 32-byte key", not Foundation's debug dump.
    static func explain(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.reduce("") { text, key in
                if let index = key.intValue { return text + "[\(index)]" }
                return text.isEmpty ? key.stringValue : text + "." + key.stringValue
            }
        }
        switch error {
        case let .dataCorrupted(context) where context.codingPath.isEmpty:
            return "not valid JSON (\(context.underlyingError.map { "\($0)" } ?? context.debugDescription))"
        case let .dataCorrupted(context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case let .keyNotFound(key, context):
            return "\(path(context.codingPath + [key])) is missing"
        case let .typeMismatch(type, context):
            return "\(path(context.codingPath)) should be \(type)"
        case let .valueNotFound(type, context):
            return "\(path(context.codingPath)) should be \(type), found null"
        @unknown default:
            return "\(error)"
        }
    }
}
