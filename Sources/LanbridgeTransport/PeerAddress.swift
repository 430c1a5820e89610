import NIOCore

/// How every log line names the other end: `192.168.1.23:51234`, `[fe80::1]:51234`, or the socket
/// path; never NIO's `[IPv4]host/192.168.1.23:51234`.
public enum PeerAddress {
    public static func format(_ address: SocketAddress?) -> String {
        guard let address else { return "?" }
        switch address {
        case .v4: return "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
        case .v6: return "[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
        case .unixDomainSocket: return address.pathname ?? "unix"
        }
    }
}
