import FoundationEssentials
import LanbridgeState
import LanbridgeNet

/// Where the gateway is, checked before the bridge dials it: a Unix socket (`unix:/run/…/gw.sock`,
/// the recommended setup: its owner is checked), or loopback `ws://`, unless the operator
/// explicitly allows a remote gateway, which must then use `wss://`.
public struct GatewayEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// Empty for a Unix socket.
    public let host: String
    public let port: Int
    public let path: String
    public let secure: Bool
    /// The socket's path, for `unix:`.
    public let socketPath: String?

    public var target: WebSocketClient.Target {
        socketPath.map { .unix(path: $0) } ?? .tcp(host: host, port: port)
    }

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let url: String
        public let reason: String
        public var description: String { "gateway URL \(url): \(reason)" }
    }

    public init(_ url: String, allowRemote: Bool) throws(Invalid) {
        if url.hasPrefix("unix:") {
            let path = String(url.dropFirst("unix:".count))
            guard path.hasPrefix("/"), !path.contains("\0"), path.utf8.count < 108 else {
                throw Invalid(url: url, reason: "a Unix socket needs an absolute path shorter than 108 bytes, like unix:/run/gateway/gateway.sock")
            }
            (host, port, self.path, secure, socketPath) = ("", 0, "/", false, path)
            return
        }
        socketPath = nil
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw Invalid(url: url, reason: "not a URL like ws://127.0.0.1:18789")
        }
        guard scheme == "ws" || scheme == "wss" else { throw Invalid(url: url, reason: "the scheme must be ws or wss") }
        guard components.user == nil, components.password == nil else {
            throw Invalid(url: url, reason: "put the token in LANBRIDGE_GATEWAY_TOKEN or a token file, not in the URL")
        }
        let loopback = Self.isLoopback(host)
        if !loopback {
            guard allowRemote else {
                throw Invalid(
                    url: url,
                    reason:
                        "\(host) is not a loopback address; the gateway must not be reachable from the LAN (pass --allow-remote-gateway, with wss://, if it really is elsewhere)")
            }
            guard scheme == "wss" else { throw Invalid(url: url, reason: "a remote gateway needs wss://") }
        }
        if scheme == "wss", Self.isIPAddress(host) {
            throw Invalid(url: url, reason: "wss:// needs a host name that its certificate names, not an IP address")
        }
        self.host = host.trimming { $0 == "[" || $0 == "]" }
        port = components.port ?? (scheme == "wss" ? 443 : 80)
        path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        secure = scheme == "wss"
    }

    public var description: String {
        if let socketPath { return "unix:\(socketPath)" }
        return "\(secure ? "wss" : "ws")://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)"
    }

    /// An IPv4 or IPv6 literal (brackets allowed), not a host name.
    public static func isIPAddress(_ host: String) -> Bool {
        let bare = host.trimming { $0 == "[" || $0 == "]" }
        return bare.contains(":") || (bare.split(separator: ".").count == 4 && bare.split(separator: ".").allSatisfy { UInt8($0) != nil })
    }

    /// `localhost`, 127.0.0.0/8 or ::1, brackets allowed.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimming { $0 == "[" || $0 == "]" }.lowercased()
        return bare == "localhost" || ListenAddress.isLoopback(bare)
    }
}
