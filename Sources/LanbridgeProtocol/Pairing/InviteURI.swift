import Foundation

/// `lanbridge://HOST:PORT/invite?fp=FINGERPRINT&s=SECRET[&name=NAME]` (PROTOCOL.md §9.3).
/// The fingerprint is the bridge's: a node that uses the invite pins it, so the invite also
/// protects the node against a bridge impostor. The secret is 16 bytes in lowercase hex.
public struct InviteURI: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var bridgeFingerprint: Fingerprint
    public var secret: [UInt8]
    public var name: String?

    public init(host: String, port: Int, bridgeFingerprint: Fingerprint, secret: [UInt8], name: String? = nil) {
        (self.host, self.port, self.bridgeFingerprint, self.secret, self.name) = (host, port, bridgeFingerprint, secret, name)
    }

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "lanbridge", components.path == "/invite",
              let host = components.host, let port = components.port,
              let items = components.queryItems,
              let fp = items.first(where: { $0.name == "fp" })?.value.flatMap(Fingerprint.init),
              let secretHex = items.first(where: { $0.name == "s" })?.value, let secret = try? Hex.decode(secretHex),
              secret.count == 16
        else { return nil }
        self.init(host: host, port: port, bridgeFingerprint: fp, secret: secret, name: items.first(where: { $0.name == "name" })?.value)
    }

    public var description: String {
        var components = URLComponents()
        components.scheme = "lanbridge"
        components.host = host
        components.port = port
        components.path = "/invite"
        components.queryItems = [URLQueryItem(name: "fp", value: bridgeFingerprint.description), URLQueryItem(name: "s", value: Hex.encode(secret))]
            + (name.map { [URLQueryItem(name: "name", value: $0)] } ?? [])
        return components.string!
    }
}
