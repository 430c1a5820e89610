import FoundationEssentials
import Glibc
import NIOCore

/// Why `serve` cannot listen, said so an admin knows what to do (not NIO's text).
public enum BindProblem: Error, CustomStringConvertible {
    case inUse(String)
    case unresolvable(String)
    case notLocal(String)
    case notPermitted(String)

    public var description: String {
        switch self {
        case let .inUse(address):
            "\(address) is already in use, by another lanbridge serve or another program (`ss -ltnp` shows which); stop it or choose another --port"
        case let .unresolvable(host):
            "--bind \(host): not an address or a name this host can resolve; use lan, loopback, or one of this host's addresses (`ip -brief address`)"
        case let .notLocal(address):
            "\(address): no interface of this host has that address (`ip -brief address` lists them)"
        case let .notPermitted(address):
            "\(address): not permitted to listen there (ports below 1024 need privileges); choose a port above 1023"
        }
    }

    static func explaining<T>(host: String, port: Int, _ bind: () async throws -> T) async throws -> T {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        do {
            return try await bind()
        } catch let error as IOError {
            switch error.errnoCode {
            case EADDRINUSE: throw BindProblem.inUse(address)
            case EADDRNOTAVAIL: throw BindProblem.notLocal(address)
            case EACCES, EPERM: throw BindProblem.notPermitted(address)
            default: throw error
            }
        } catch is SocketAddressError.UnknownHost {
            throw BindProblem.unresolvable(host)
        } catch is SocketAddressError {
            throw BindProblem.unresolvable(host)
        }
    }
}
