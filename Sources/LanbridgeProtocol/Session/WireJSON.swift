#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension JSONEncoder {
    /// The one output format lanbridge writes on the wire: sorted keys, slashes as they are, ISO
    /// 8601 dates. Shared: encoding does not change the encoder, and it is Sendable.
    static let lanbridge: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}
