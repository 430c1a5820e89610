#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol

/// A daemon-only file of secrets kept per paired node (mode 0600, read into wiped memory):
/// `{"version": 1, "<table>": {"<node ID>": record}}`. It is read, changed and written whole;
/// callers serialise changes. Records of nodes no longer paired are removed by `keepOnly`, at
/// start and when the pairing store shrinks, so a crash between this file's write and the store's
/// leaves nothing that grants anything.
public struct NodeSecrets<Record: Codable & Sendable & Equatable>: Sendable {
    public let url: URL
    private let table: String
    public static var maxFileBytes: Int { 4 << 20 }

    private let version: Int
    private let open: @Sendable (Data) throws -> Data

    /// `open` judges the file's format before it is decoded (StateFormat, in the stores): it
    /// returns the bytes to decode, or refuses; `version` is the format written.
    public init(_ url: URL, table: String, version: Int = 1, open: @escaping @Sendable (Data) throws -> Data = { $0 }) {
        (self.url, self.table, self.version, self.open) = (url, table, version, open)
    }

    public func read() throws -> [String: Record] {
        guard let bytes = try SecretFile.read(url, maxLength: Self.maxFileBytes) else { return [:] }
        let data = try bytes.withUnsafeBytes { try open(Data($0)) }
        do {
            return try LanbridgeJSON.decoder.decode(File.self, from: data).records(table)
        } catch {
            throw StoreError.corrupt(url, "\(error)")
        }
    }

    /// Changes the records; writes only when they changed. Returns what `body` returns.
    @discardableResult
    public func update<T>(_ body: (inout [String: Record]) throws -> T) throws -> T {
        let before = try read()
        var records = before
        let value = try body(&records)
        if records != before {
            try AtomicFile.write(SecureBytes(copying: try StateJSON.encode(File(version: version, table: table, records: records))), to: url, mode: 0o600)
        }
        return value
    }

    /// Forgets every record but those of `nodes` (the paired ones); returns how many went.
    @discardableResult
    public func keepOnly(_ nodes: Set<Fingerprint>) throws -> Int {
        let keep = Set(nodes.map(\.description))
        return try update { records in
            let before = records.count
            records = records.filter { keep.contains($0.key) }
            return before - records.count
        }
    }

    /// `{"version": 1, "<table>": {...}}`, with the table's name chosen by the file.
    private struct File: Codable {
        var version = 1
        var tables: [String: [String: Record]]

        init(version: Int, table: String, records: [String: Record]) { (self.version, tables) = (version, [table: records]) }
        func records(_ table: String) -> [String: Record] { tables[table] ?? [:] }

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            version = try container.decode(Int.self, forKey: Key(stringValue: "version"))
            tables = [:]
            for key in container.allKeys where key.stringValue != "version" {
                tables[key.stringValue] = try container.decode([String: Record].self, forKey: key)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(version, forKey: Key(stringValue: "version"))
            for (name, records) in tables { try container.encode(records, forKey: Key(stringValue: name)) }
        }
    }
}
