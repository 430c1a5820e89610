#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How state files are written as JSON: ISO 8601 dates, sorted keys, a trailing newline, so a
/// file changes only where its content does (and diffs and the audit log stay readable).
package enum StateJSON {
    package static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()

    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(value)) + [UInt8(ascii: "\n")]
    }
}
