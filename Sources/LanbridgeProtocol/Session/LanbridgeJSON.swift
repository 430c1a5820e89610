#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Every JSON coder lanbridge writes or reads with, in one place: the wire, the state files, the
/// audit log and the CLI's `--json` all take theirs from here, so a date or a key order is written
/// one way everywhere. Shared: coding does not change a coder, and they are Sendable.
public enum LanbridgeJSON {
    /// One line: the wire, the audit log, runtime.json's values. Sorted keys, slashes as they are,
    /// ISO 8601 dates.
    public static let compact: JSONEncoder = encoder([.sortedKeys, .withoutEscapingSlashes])
    /// For people: the state files and the CLI's `--json`. The same, indented.
    public static let pretty: JSONEncoder = encoder([.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    /// Every reader: ISO 8601 dates.
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    private static func encoder(_ formatting: JSONEncoder.OutputFormatting) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
