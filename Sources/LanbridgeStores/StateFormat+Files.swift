import FoundationEssentials
import LanbridgeFiles
import LanbridgeState

extension StateFormat {
    /// The bytes a store decodes from `url`: `data` itself when current, or migrated in memory
    /// (the store writes them back at its next change). A newer or unknown format is refused as a
    /// corrupt file, naming both versions; nothing is written.
    func bytes(_ data: Data, as file: File, url: URL) throws -> (bytes: Data, migrated: (from: Int, to: Int)?) {
        do {
            switch try open(data, as: file) {
            case .current: return (data, nil)
            case let .migrated(from, to, value): return (Data(try StateJSON.encode(value)), (from, to))
            }
        } catch let refusal as Refusal {
            if case .newer = refusal { throw StoreError.newerFormat(url, refusal.description) }
            throw StoreError.corrupt(url, refusal.description)
        }
    }
}

extension NodeSecrets {
    /// A per-node secrets file in the format `StateFormat` gives it.
    init(_ file: StateFormat.File, in directory: StateDirectory, table: String, formats: StateFormat = .current) {
        let url = directory.file(file.rawValue)
        self.init(url, table: table, version: formats.version(file)) { try formats.bytes($0, as: file, url: url).bytes }
    }
}
