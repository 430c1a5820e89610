#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `lanbridge://HOST:PORT/invite?fp=FINGERPRINT&s=SECRET[&a=HOST:PORT]…[&name=NAME]` (PROTOCOL.md §9.3).
/// The fingerprint is the bridge's: a node that uses the invite pins it, so the invite also
/// protects the node against a bridge impostor. The secret is 16 bytes in lowercase hex. `a`
/// lists up to three more addresses, after `HOST:PORT`, in order of preference.
public struct InviteURI: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var bridgeFingerprint: Fingerprint
    public var secret: [UInt8]
    public var name: String?
    /// More places to dial, after `host:port` (at most `maxAlternates`).
    public var alternates: [ReachableAddress] = []
    public static let maxAlternates = ReachableAddress.maxCount - 1

    public init(
        host: String, port: Int, bridgeFingerprint: Fingerprint, secret: [UInt8], name: String? = nil,
        alternates: [ReachableAddress] = []
    ) {
        (self.host, self.port, self.bridgeFingerprint, self.secret, self.name) = (host, port, bridgeFingerprint, secret, name)
        self.alternates = Array(alternates.filter { $0 != ReachableAddress(host: host, port: port) }.prefix(Self.maxAlternates))
    }

    /// Every address, first choice first: `host:port`, then the alternates.
    public var addresses: [ReachableAddress] { [ReachableAddress(host: host, port: port)] + alternates }

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "lanbridge", components.path == "/invite",
            let rawHost = components.host, let port = components.port, (1...65535).contains(port),
            let host = Self.validHost(rawHost),
            let items = components.queryItems,
            let fp = items.first(where: { $0.name == "fp" })?.value.flatMap(Fingerprint.init),
            let secretHex = items.first(where: { $0.name == "s" })?.value, let secret = try? Hex.decode(secretHex),
            secret.count == 16
        else { return nil }
        // An `a` that is not HOST:PORT is skipped (a later version may add other forms), and
        // more than three are cut: the list is a hint, the fingerprint decides.
        let alternates = ReachableAddress.list(items.filter { $0.name == "a" }.compactMap(\.value))
        self.init(
            host: host, port: port, bridgeFingerprint: fp, secret: secret, name: items.first(where: { $0.name == "name" })?.value,
            alternates: alternates)
    }

    /// Written by hand, so no host or name can make it fail: an IPv6 host gets its brackets, the
    /// name is percent-encoded.
    public var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        var text = "lanbridge://\(hostPart):\(port)/invite?fp=\(bridgeFingerprint)&s=\(Hex.encode(secret))"
        for address in alternates {
            text += "&a=" + PercentEncoding.encode(address.description) { $0 != UInt8(ascii: "[") && $0 != UInt8(ascii: "]") }
        }
        if let name { text += "&name=" + PercentEncoding.encode(name) }
        return text
    }

    /// A host name (letters, digits, dots, hyphens) or an IP address, brackets taken off; nil else.
    public static func validHost(_ host: String) -> String? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard !bare.isEmpty, bare.utf8.count <= 253 else { return nil }
        let allowed: Set<UInt8> = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-".utf8))
        if bare.utf8.allSatisfy(allowed.contains), !bare.hasPrefix("-"), !bare.hasPrefix(".") { return bare }
        let ipv6: Set<UInt8> = Set(Array("0123456789abcdefABCDEF:.".utf8))
        if bare.contains(":"), bare.utf8.allSatisfy(ipv6.contains) { return bare }
        return nil
    }
}

/// An invite just written, and its URI (`InviteIssuer`): shown once, then only its expiry is.
public struct IssuedInvite: Sendable, Equatable {
    public let uri: InviteURI
    public let expiresAt: Date
    public init(uri: InviteURI, expiresAt: Date) { (self.uri, self.expiresAt) = (uri, expiresAt) }
}
