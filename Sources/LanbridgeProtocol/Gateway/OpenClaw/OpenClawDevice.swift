#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto

/// A device as an OpenClaw gateway authenticates it (openclaw-gateway-protocol.md §2.3–2.4): an
/// Ed25519 key, whose SHA-256 in hex is the device ID (and the node ID the gateway shows), signing
/// a `|`-joined payload bound to the gateway's challenge nonce. lanbridge holds one per paired node.
public struct OpenClawDevice: Sendable {
    /// The signed payload's format: v3 binds the platform and device family too; gateways try v3
    /// first, and older ones know only v2.
    public enum PayloadVersion: String, Sendable, CaseIterable {
        case v2, v3
    }

    /// What the connect request claims, and the signature binds.
    public struct Claims: Sendable, Equatable {
        public var clientId: String
        public var clientMode: String
        public var role: String
        public var scopes: [String]
        public var platform: String
        public var deviceFamily: String?

        /// A node's claims: `node-host` in mode and role `node`, no scopes (scopes would make the
        /// gateway ask for an operator's approval).
        public static func node(platform: String, deviceFamily: String?) -> Claims {
            Claims(clientId: "node-host", clientMode: "node", role: "node", scopes: [], platform: platform, deviceFamily: deviceFamily)
        }

        public init(clientId: String, clientMode: String, role: String, scopes: [String], platform: String, deviceFamily: String?) {
            (self.clientId, self.clientMode, self.role, self.scopes) = (clientId, clientMode, role, scopes)
            (self.platform, self.deviceFamily) = (platform, deviceFamily)
        }
    }

    public let key: Ed25519.KeyPair
    /// hex(SHA-256(raw public key)), lowercase: what the gateway recomputes and calls the node.
    public let deviceId: String
    /// The raw public key, base64url without padding, as `device.publicKey`.
    public let publicKey: String

    public init(key: Ed25519.KeyPair) {
        self.key = key
        deviceId = Hex.encode(SHA256.hash(key.publicKey))
        publicKey = Base64URL.encode(key.publicKey)
    }

    /// The exact string the gateway verifies (§2.4). `token` is what `auth.token ?? auth.deviceToken`
    /// resolves to in the request: the caller passes the one it sends.
    public func payload(_ version: PayloadVersion, claims: Claims, signedAtMs: Int64, token: String, nonce: String) -> String {
        Self.payload(version, deviceId: deviceId, claims: claims, signedAtMs: signedAtMs, token: token, nonce: nonce)
    }

    /// The same, for any device: what lanbridge's front door for OpenClaw's apps verifies.
    public static func payload(_ version: PayloadVersion, deviceId: String, claims: Claims, signedAtMs: Int64, token: String, nonce: String) -> String {
        var fields = [
            version.rawValue, deviceId, claims.clientId, claims.clientMode, claims.role,
            claims.scopes.joined(separator: ","), String(signedAtMs), token, nonce,
        ]
        if version == .v3 { fields += [Self.normalized(claims.platform), Self.normalized(claims.deviceFamily ?? "")] }
        return fields.joined(separator: "|")
    }

    /// `connect.params.device`: `{id, publicKey, signature, signedAt, nonce}`.
    public func proof(_ version: PayloadVersion, claims: Claims, signedAtMs: Int64, token: String, nonce: String) -> JSONValue {
        let signed = payload(version, claims: claims, signedAtMs: signedAtMs, token: token, nonce: nonce)
        return [
            "id": .string(deviceId), "publicKey": .string(publicKey),
            "signature": .string(Base64URL.encode(key.sign(Array(signed.utf8)))),
            "signedAt": .number(Double(signedAtMs)), "nonce": .string(nonce),
        ]
    }

    /// v3's platform and device family: trimmed, ASCII letters lowercased (and nothing else).
    static func normalized(_ value: String) -> String {
        String(decoding: value.trimmingWhitespaceAndNewlines().utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

/// Base64url without padding (RFC 4648 §5), as OpenClaw sends keys, signatures and tokens.
public enum Base64URL {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingScalars { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? "" : nil }
    }

    /// Decodes base64url or standard base64, padded or not (as the gateway accepts both); nil if neither.
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = text.replacingScalars { $0 == "-" ? "+" : $0 == "_" ? "/" : nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
