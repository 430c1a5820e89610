import LanbridgeProtocol

/// Where the canvas relay fetches from: a canvas host on this machine's loopback, over TCP
/// (`http://127.0.0.1:18789`) or a unix socket (`unix:/run/canvas.sock`). Nothing else: the relay
/// never becomes a way for a LAN device to reach another host.
public enum CanvasUpstream: Equatable, Sendable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case unix(path: String)

    public init?(_ text: String) {
        if text.hasPrefix("unix:/") {
            let path = String(text.dropFirst(5))
            guard !path.utf8.contains(0), path.utf8.count < 108 else { return nil }
            self = .unix(path: path)
            return
        }
        guard let url = try? CanvasURL(text), url.scheme == "http", !url.hasCredentials, let host = url.host, let port = url.port else { return nil }
        // Only the origin: a path would be silently dropped.
        guard text.utf8.filter({ $0 == UInt8(ascii: "/") }).count == 2 || text.hasSuffix("/") && text.utf8.filter({ $0 == UInt8(ascii: "/") }).count == 3 else { return nil }
        switch host {
        case .name("localhost"): self = .tcp(host: "127.0.0.1", port: port)
        case let .ipv4(a) where a >> 24 == 127: self = .tcp(host: "\(host)", port: port)
        case .ipv6([0, 0, 0, 0, 0, 0, 0, 1]): self = .tcp(host: "::1", port: port)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case let .tcp(host, port): host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
        case let .unix(path): "unix:\(path)"
        }
    }

    /// The `Host` header the relay sends upstream.
    public var hostHeader: String {
        switch self {
        case let .tcp(host, port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix: "localhost"
        }
    }
}

/// Where the canvas relay listens: a port on each of the bridge's listen addresses, or one address.
public struct CanvasListen: Equatable, Sendable {
    /// Nil: every address the bridge listens on.
    public var host: String?
    public var port: Int

    public init?(_ text: String) {
        let body = text.hasPrefix(":") ? String(text.dropFirst()) : text
        if let port = Int(body), (0...65535).contains(port) {
            (host, self.port) = (nil, port)
            return
        }
        guard let address = try? ListenAddress(text, allowRemote: true) else { return nil }
        (host, port) = (address.host, address.port)
    }
}
