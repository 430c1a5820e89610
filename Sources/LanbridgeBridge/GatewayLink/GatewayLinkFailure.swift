import LanbridgeNet
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#endif

/// Why the gateway link is down, in the operator's words: what `status`, `doctor`, `/healthz` and
/// the journal say instead of SwiftNIO's `SingleConnectionFailure(…)`.
enum GatewayLinkFailure {
    static func describe(_ error: any Error, endpoint: GatewayEndpoint) -> String {
        let place = endpoint.socketPath.map { "unix:\($0)" } ?? "\(endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host):\(endpoint.port)"
        switch error {
        case let error as NIOConnectionError:
            // Every address tried failed; the first says enough (loopback has one or two).
            if let first = error.connectionErrors.first { return describe(first.error, endpoint: endpoint) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve \(endpoint.host)" }
            return "cannot connect to \(place)"
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return "nothing listens on \(place); is the gateway running?"
            case ENOENT: return "no socket at \(place); is the gateway running?"
            case EACCES, EPERM: return "not allowed to connect to \(place) (permissions)"
            case ETIMEDOUT: return "\(place) did not answer"
            case ENETUNREACH, EHOSTUNREACH: return "\(place) cannot be reached from here"
            default: return "cannot connect to \(place): \(error)"
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return "\(place) did not answer" }
            return "\(error)"
        case let error as WebSocketError:
            switch error {
            case let .refused(status, _) where status == 401 || status == 403:
                return "the gateway refused the bridge's token (HTTP \(status)); the token file and the gateway's token differ"
            case let .refused(status, reason):
                return "\(place) answered HTTP \(status) \(reason), not a WebSocket: is that the gateway's port and path?"
            case let .peerRefused(reason):
                return "\(place) is not the gateway the bridge may talk to: \(reason)"
            case let .responseRefused(reason):
                return "\(place) did not prove it knows the gateway token: \(reason)"
            case .closed:
                return "\(error)"
            }
        case let error as NIOSSLError:
            return "TLS with \(place) failed: \(error)"
        case let error as BoringSSLError:
            return "TLS with \(place) failed (the certificate or the trust roots?): \(error)"
        default:
            return "\(error)"
        }
    }
}
