import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One line of audit.jsonl.
public struct AuditEntry: Codable, Equatable, Sendable {
    public var time: Date
    public var event: String
    /// Who did it: `uid:<n>` for the CLI, `bridge` for the daemon.
    public var actor: String
    public var nodeId: String?
    public var requestId: String?
    public var detail: String?
    /// SHA-256 (hex) of the previous line's bytes; 64 zeros for the first line.
    public var prev: String

    public init(time: Date, event: String, actor: String, nodeId: String? = nil, requestId: String? = nil, detail: String? = nil) {
        (self.time, self.event, self.actor, self.nodeId, self.requestId, self.detail) = (time, event, actor, nodeId, requestId, detail)
        prev = ""
    }
}

/// The append-only audit log, `audit.jsonl` in the state directory. Each line carries the hash of the
/// one before it, so editing or removing a line in the middle breaks the chain at the next line.
/// Appends happen under the store lock, so the daemon and the CLI never interleave.
public struct AuditLog: Sendable {
    public static let fileName = "audit.jsonl"
    public static let genesis = String(repeating: "0", count: 64)
    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// The current uid as an actor name.
    public static var currentUser: String { "uid:\(getuid())" }

    /// Appends entries, chaining each to the last line on disk. Call with the store lock held.
    func append(_ entries: [AuditEntry]) throws {
        guard !entries.isEmpty else { return }
        var previous = try lastLineHash()
        var text: [UInt8] = []
        for var entry in entries {
            entry.prev = previous
            let line = Array(try Self.encoder.encode(entry))
            previous = Hex.encode(SHA256.hash(line))
            text += line + [UInt8(ascii: "\n")]
        }
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(url, posixError("cannot open")) }
        defer { close(fd) }
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(fd) == 0 else { throw StoreError.io(url, posixError("append")) }
    }

    public struct Verification: Sendable, Equatable {
        public var lines: Int
        /// 1-based line numbers whose `prev` does not match the line before, or that do not parse.
        public var brokenAt: [Int]
        public var isIntact: Bool { brokenAt.isEmpty }
    }

    /// Walks the chain. A missing log is an empty, intact one.
    public func verify() throws -> Verification {
        guard let data = try? Data(contentsOf: url) else { return Verification(lines: 0, brokenAt: []) }
        var previous = Self.genesis
        var broken: [Int] = []
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let count = lines.last?.isEmpty == true ? lines.count - 1 : lines.count
        for (index, line) in lines.prefix(count).enumerated() {
            let entry = try? JSONDecoder.audit.decode(AuditEntry.self, from: Data(line))
            if entry?.prev != previous { broken.append(index + 1) }
            previous = Hex.encode(SHA256.hash(Array(line)))
        }
        return Verification(lines: count, brokenAt: broken)
    }

    public func entries() throws -> [AuditEntry] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder.audit.decode(AuditEntry.self, from: Data($0)) }
    }

    private func lastLineHash() throws -> String {
        guard let data = try? Data(contentsOf: url), !data.isEmpty else { return Self.genesis }
        let lines = data.split(separator: UInt8(ascii: "\n"))
        return lines.last.map { Hex.encode(SHA256.hash(Array($0))) } ?? Self.genesis
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        return e
    }()
}

extension JSONDecoder {
    static let audit: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()
}
