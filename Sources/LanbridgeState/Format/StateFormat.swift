import FoundationEssentials
import LanbridgeProtocol

/// Which format each state file is in, and how an older one becomes the current one: the one
/// place that knows. A file says its format in a top-level `"version"`.
///
/// A newer file is refused, never rewritten (a downgraded lanbridge fails closed on it); an older
/// one is migrated in memory here and written back by its store, write-ahead, with one audit line.
public struct StateFormat: Sendable {
    public enum File: String, CaseIterable, Sendable {
        case paired = "paired.json"
        case pending = "pending.json"
        case invites = "invites.json"
        case pushTokens = "push-tokens.json"
        case openClawDevices = "openclaw-devices.json"
        case config = "config.json"
        case runtime = "runtime.json"
        case auditHead = "audit.head"
    }

    /// One step: a file's JSON in format `from`, turned into format `from + 1`.
    public struct Migration: Sendable {
        public var file: File
        public var from: Int
        public var apply: @Sendable (JSONValue) throws -> JSONValue
        public init(file: File, from: Int, apply: @escaping @Sendable (JSONValue) throws -> JSONValue) {
            (self.file, self.from, self.apply) = (file, from, apply)
        }
    }

    public var versions: [File: Int]
    public var migrations: [Migration]
    /// Files that may leave `"version"` out, and the format that means: the operator's config, and
    /// files an older daemon wrote before they carried one.
    public var unversioned: [File: Int]

    /// What this lanbridge reads and writes. Every file is format 1: the shapes since 0.5.0 only
    /// added optional fields, which an older reader ignores. Raise a number (and add its step to
    /// `migrations`) when a change would be misread by an older lanbridge.
    public static let current = StateFormat(
        versions: Dictionary(uniqueKeysWithValues: File.allCases.map { ($0, 1) }),
        migrations: [],
        unversioned: [.config: 1, .runtime: 1, .auditHead: 1])

    public init(versions: [File: Int], migrations: [Migration], unversioned: [File: Int] = [:]) {
        (self.versions, self.migrations, self.unversioned) = (versions, migrations, unversioned)
    }

    public func version(_ file: File) -> Int { versions[file] ?? 1 }

    /// A file as opened: already current, or migrated in memory (`value`, not yet written).
    public enum Opened: Equatable, Sendable {
        case current
        case migrated(from: Int, to: Int, value: JSONValue)
    }

    /// A file's format and nothing else: its other keys are skipped, not built into values.
    private struct Probe: Decodable { let version: Int? }

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case newer(File, found: Int, reads: Int)
        case unknown(File, found: Int, reads: Int)
        case missing(File)
        case failed(File, from: Int, reason: String)

        /// Said of the file, whose path the caller puts first.
        public var description: String {
            switch self {
            case let .newer(_, found, reads):
                "it is format \(found), written by a newer lanbridge; this one reads format \(reads). Nothing was changed: run the newer lanbridge, or restore a backup this version made (lanbridge restore)"
            case let .unknown(_, found, reads): "it says format \(found), which no lanbridge wrote (this one reads format \(reads))"
            case .missing: "it has no \"version\": it is not a file lanbridge wrote"
            case let .failed(_, from, reason): "it cannot be migrated from format \(from): \(reason). Nothing was changed"
            }
        }
    }

    /// Judges a file's bytes before anything decodes them. Writes nothing. Only the version is read
    /// (a store read of a large paired.json must not build a tree of it); the whole file is parsed
    /// here only when it has to be migrated.
    public func open(_ data: Data, as file: File) throws(Refusal) -> Opened {
        let reads = version(file)
        // Not an object, or a version that is not a whole number: the decoder says what is wrong,
        // with its path.
        guard let probe = try? LanbridgeJSON.decoder.decode(Probe.self, from: data) else { return .current }
        let found: Int
        if let version = probe.version {
            found = version
        } else if let assumed = unversioned[file] {
            found = assumed
        } else {
            throw .missing(file)
        }
        if found == reads { return .current }
        if found > reads { throw .newer(file, found: found, reads: reads) }
        guard found >= 1, var value = try? LanbridgeJSON.decoder.decode(JSONValue.self, from: data) else { throw .unknown(file, found: found, reads: reads) }
        for step in found..<reads {
            guard let migration = migrations.first(where: { $0.file == file && $0.from == step }) else {
                throw .unknown(file, found: found, reads: reads)
            }
            do { value = try migration.apply(value) } catch { throw .failed(file, from: step, reason: "\(error)") }
        }
        guard case var .object(fields) = value else { throw .failed(file, from: found, reason: "the result is not an object") }
        fields["version"] = .number(Double(reads))
        return .migrated(from: found, to: reads, value: .object(fields))
    }
}
