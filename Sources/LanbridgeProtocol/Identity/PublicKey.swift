#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto

/// An X25519 public key as stored and shown: 32 bytes, base64 in JSON.
public struct PublicKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public static let length = 32
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    /// SHA-256 of `material`: a key value nobody holds the private scalar for (an identity that
    /// must never pass a Noise handshake, such as an OpenClaw app's).
    public init(hashing material: [UInt8]) {
        bytes = SHA256.hash(material)
    }

    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64), let key = PublicKey(bytes: Array(data)) else { return nil }
        self = key
    }

    public var base64: String { Data(bytes).base64EncodedString() }
    public var fingerprint: Fingerprint { Fingerprint(publicKey: bytes) }
    public var description: String { base64 }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let key = PublicKey(base64: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected base64 of a 32-byte key"))
        }
        self = key
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64)
    }
}
