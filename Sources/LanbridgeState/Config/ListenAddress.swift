/// Where a local-only service listens: `127.0.0.1:18791`, `[::1]:18791`, `localhost:18791`.
/// Anything but a loopback address is refused unless `allowRemote` says the admin means it.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case notLoopback(String)
        public var description: String {
            switch self {
            case let .malformed(text): "\"\(text)\" is not host:port (e.g. 127.0.0.1:18791 or [::1]:18791)"
            case let .notLoopback(host):
                "\(host) is not a loopback address; this endpoint is for this machine (allow others explicitly with allowRemote / --metrics-allow-remote / --ui-allow-remote)"
            }
        }
    }

    public init(_ text: String, allowRemote: Bool) throws(Problem) {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw .malformed(text) }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw .malformed(text) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { throw .malformed(text) }
        let name = host == "localhost" ? "127.0.0.1" : String(host)
        guard allowRemote || Self.isLoopback(name) else { throw .notLoopback(name) }
        (self.host, self.port) = (name, port)
    }

    /// 127.0.0.0/8 and ::1.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    public var isLoopback: Bool { Self.isLoopback(host) }
    public var description: String { Self.format(host: host, port: port) }

    public static func format(host: String, port: Int) -> String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
