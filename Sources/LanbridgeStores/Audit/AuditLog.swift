import FoundationEssentials
import LanbridgeFiles
import LanbridgeCrypto
import LanbridgeProtocol
import Glibc
import LanbridgeState

/// The append-only audit log, `audit.jsonl` in the state directory. Each line carries the hash of the
/// one before it, so editing or removing a line in the middle breaks the chain at the next line.
/// Appends happen under the store lock, so the daemon and the CLI never interleave.
public struct AuditLog: Sendable {
    public static let fileName = "audit.jsonl"
    /// The head: the log's line count and last hash (`Head`).
    public static let headFileName = StateFormat.File.auditHead.rawValue
    public static let genesis = String(repeating: "0", count: 64)
    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// The current uid as an actor name.
    public static var currentUser: String { "uid:\(getuid())" }

    /// Where the log's head is anchored: how many lines it had and the hash of the last one,
    /// rewritten after every append. Cutting lines off the end is then visible to `verify`.
    public struct Head: Codable, Equatable, Sendable {
        /// The log's format (StateFormat's `.auditHead`); absent before 0.10.0, which means 1.
        public var version: Int? = StateFormat.current.version(.auditHead)
        public var lines: Int
        public var last: String
    }

    /// Refuses a log whose head a newer lanbridge wrote, before anything is appended to it.
    func checkFormat(_ formats: StateFormat) throws {
        guard let data = try? Data(contentsOf: headURL) else { return }
        _ = try formats.bytes(data, as: .auditHead, url: headURL)
    }

    public var headURL: URL { url.deletingLastPathComponent().appendingPathComponent(Self.headFileName) }

    /// Appends entries, chaining each to the last line on disk, then moves the head. Call with the
    /// store lock held. Entries of a change (`tx`) already in the log are not written again, and a
    /// torn last line, left by a writer that died mid-append, is cut off first (the change it
    /// belonged to is being redone: see PairingStore's journal).
    func append(_ entries: [AuditEntry], tx: String? = nil) throws {
        guard !entries.isEmpty else { return }
        var data = (try? Data(contentsOf: url)) ?? Data()
        if let last = data.last, last != UInt8(ascii: "\n") {
            let keep = (data.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 }) ?? 0
            guard truncate(url.path, off_t(keep)) == 0 else { throw StoreError.io(url, posixError("cut a torn line")) }
            data = data.prefix(keep)
        }
        let lines = data.split(separator: UInt8(ascii: "\n"))
        var previous = lines.last.map { Hex.encode(SHA256.hash(Array($0))) } ?? Self.genesis
        if let tx, data.firstRange(of: Array("\"tx\":\"\(tx)\"".utf8)) != nil {
            // Already written by the writer that died: only the head may lag behind.
            return try moveHead(to: Head(lines: lines.count, last: previous))
        }
        var text: [UInt8] = []
        for var entry in entries {
            entry.prev = previous
            entry.tx = tx
            let line = Array(try LanbridgeJSON.compact.encode(entry))
            previous = Hex.encode(SHA256.hash(line))
            text += line + [UInt8(ascii: "\n")]
        }
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(url, posixError("cannot open")) }
        defer { close(fd) }
        try StateSharing.adopt(fd, in: url.deletingLastPathComponent(), path: url)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(fd) == 0 else {
            let reason = posixError("append")
            // Never leave a torn line (a full disk writes part of one): cut back to where it was.
            _ = ftruncate(fd, off_t(data.count))
            throw StoreError.io(url, reason)
        }
        try moveHead(to: Head(lines: lines.count + entries.count, last: previous))
    }

    /// Where the log and its head are now, to go back to if the change being written fails.
    struct Mark {
        var length: off_t?
        var head: Data?
    }

    func mark() -> Mark {
        var info = stat()
        return Mark(length: stat(url.path, &info) == 0 ? info.st_size : nil, head: try? Data(contentsOf: headURL))
    }

    /// Cuts the log back to `mark` and puts its head back: the entries of a change that was undone.
    func rewind(to mark: Mark) throws {
        if let length = mark.length {
            guard truncate(url.path, length) == 0 || errno == ENOENT else { throw StoreError.io(url, posixError("cut back")) }
        } else if unlink(url.path) != 0, errno != ENOENT {
            throw StoreError.io(url, posixError("remove"))
        }
        try AtomicFile.restore(mark.head, at: headURL)
    }

    private func moveHead(to head: Head) throws {
        if (try? LanbridgeJSON.decoder.decode(Head.self, from: Data(contentsOf: headURL))) == head { return }
        try AtomicFile.write(Array(LanbridgeJSON.compact.encode(head)), to: headURL)
    }

    public struct Verification: Sendable, Equatable {
        public var lines: Int
        /// 1-based line numbers whose `prev` does not match the line before, or that do not parse.
        public var brokenAt: [Int]
        /// Set when the log is shorter than its anchored head says, or the head's line is not the
        /// line it names: lines were cut off the end (or the head itself was replaced).
        public var truncated: String?
        /// Lines past the anchored head (written without moving it: a crash, or another writer).
        public var unanchored = 0
        /// The last line is cut short (no newline, not an entry): a write that did not finish, as
        /// a full disk or a crash leaves it. Not tampering: the next append cuts it off, and
        /// lanbridge's own appends cut back what they could not finish.
        public var tornTail = false
        public var isIntact: Bool { brokenAt.isEmpty && truncated == nil }
    }

    /// Walks the chain and checks it against the anchored head. A missing log with no head is an
    /// empty, intact one.
    ///
    /// It finds a changed, inserted or removed line anywhere before the last (the chain breaks at
    /// the next line), and lines cut off the end (the head). It cannot find a log rewritten whole,
    /// chain and head together, by someone with write access to the state directory: the chain
    /// has no secret. Keep a copy of `audit.head` elsewhere to detect even that.
    public func verify() throws -> Verification {
        let data = (try? Data(contentsOf: url)) ?? Data()
        var previous = Self.genesis
        var broken: [Int] = []
        var hashes: [String] = []
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var count = lines.last?.isEmpty == true ? lines.count - 1 : lines.count
        // A last line with no newline that is no entry is a write cut short, not a change.
        var torn = false
        if count > 0, data.last != UInt8(ascii: "\n"), let last = lines.last, (try? LanbridgeJSON.decoder.decode(AuditEntry.self, from: Data(last))) == nil {
            (count, torn) = (count - 1, true)
        }
        for (index, line) in lines.prefix(count).enumerated() {
            let entry = try? LanbridgeJSON.decoder.decode(AuditEntry.self, from: Data(line))
            if entry?.prev != previous { broken.append(index + 1) }
            previous = Hex.encode(SHA256.hash(Array(line)))
            hashes.append(previous)
        }
        var result = Verification(lines: count, brokenAt: broken)
        result.tornTail = torn
        if let head = try? LanbridgeJSON.decoder.decode(Head.self, from: Data(contentsOf: headURL)) {
            if head.lines > count {
                result.truncated = "the head says \(head.lines) lines, the log has \(count): lines were cut off the end"
            } else if head.lines > 0, hashes[head.lines - 1] != head.last {
                result.truncated = "line \(head.lines), where the head is anchored, is not the line it was"
            } else {
                result.unanchored = count - head.lines
            }
        } else if count > 0, FileManager.default.fileExists(atPath: headURL.path) {
            result.truncated = "audit.head cannot be read"
        }
        return result
    }

    /// Every entry; a torn last line (see `Verification.tornTail`) is not one.
    public func entries() throws -> [AuditEntry] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        var lines = data.split(separator: UInt8(ascii: "\n"))
        if data.last != UInt8(ascii: "\n"), let last = lines.last, (try? LanbridgeJSON.decoder.decode(AuditEntry.self, from: Data(last))) == nil {
            lines.removeLast()
        }
        return try lines.map { try LanbridgeJSON.decoder.decode(AuditEntry.self, from: Data($0)) }
    }

}

extension AuditLog {
    /// Paired nodes the log does not explain: their last pairing event is not an approval or an
    /// invite's redemption (a node written into paired.json by hand, or a log cut short).
    public static func unexplained(_ paired: [PairedNode], entries: [AuditEntry]) -> [String] {
        paired.filter { node in
            let last = entries.last { $0.nodeId == node.nodeId.description && ["pairing.approved", "pairing.invite-redeemed", "node.revoked"].contains($0.event) }
            return last == nil || last?.event == "node.revoked"
        }.map(\.nodeId.description)
    }
}
