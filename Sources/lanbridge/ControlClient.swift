import ArgumentParser
import FoundationEssentials
import LanbridgeFiles
import LanbridgeProtocol
#if canImport(Glibc)
    import Glibc
#endif

/// Talks to the running daemon over its control socket: one request frame out, one response
/// frame back (PROTOCOL.md §12.7). Blocking, which is all a one-shot CLI command needs.
struct ControlClient {
    struct NotRunning: Error, CustomStringConvertible {
        let path: String
        let reason: String
        var description: String { "the daemon is not running (no control socket at \(path): \(reason)); start `lanbridge serve`" }
    }

    let path: String

    func request(_ method: ControlMethod, params: JSONValue, timeout: TimeInterval) throws -> Result<JSONValue?, ErrorMessage> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NotRunning(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw NotRunning(path: path, reason: "path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw NotRunning(path: path, reason: String(cString: strerror(errno))) }
        var wait = timeval(tv_sec: Int(timeout.rounded(.up)), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))

        let id = "cli-\(getpid())"
        let line = GatewayFrame.request(id: id, method: method.name, params: params).encoded() + [0x0A]
        var sent = 0
        while sent < line.count {
            let n = line[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw NotRunning(path: path, reason: "write failed") }
            sent += n
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while !reply.contains(0x0A) {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return .failure(ErrorMessage(code: ErrorMessage.timeout, message: "the daemon did not answer in time", retryable: true))
            }
            guard n > 0 else { throw NotRunning(path: path, reason: "the daemon closed the connection") }
            reply += chunk[..<n]
        }
        guard case let .response(_, result) = try GatewayFrame.decode(reply[..<reply.firstIndex(of: 0x0A)!]) else {
            throw NotRunning(path: path, reason: "unexpected answer")
        }
        return result
    }
}

extension ControlClient {
    /// A one-shot command's request to the running daemon: its answer, or nil when no daemon
    /// runs on `directory` (the caller says what that means, or does the work itself). A refusal
    /// is a one-line note and exit 69 (EX_UNAVAILABLE).
    static func ask(_ directory: StateDirectory, _ method: ControlMethod, _ params: [String: JSONValue] = [:], timeout: TimeInterval = 10) throws -> JSONValue? {
        do {
            switch try ControlClient(path: directory.controlSocketPath).request(method, params: .object(params), timeout: timeout) {
            case let .success(value?): return value
            case .success(nil): throw ExitCode(69)
            case let .failure(error):
                Output.note("lanbridge: \(error.message)")
                throw ExitCode(69)
            }
        } catch is NotRunning {
            return nil
        }
    }

    /// The daemon's answer as it gave it, for a command that maps its errors itself. No daemon:
    /// `notRunning` is said (by default, why the socket did not answer), exit 69.
    static func answer(
        _ directory: StateDirectory, _ method: ControlMethod, _ params: [String: JSONValue], timeout: TimeInterval = 10, notRunning: String? = nil
    ) throws -> Result<JSONValue?, ErrorMessage> {
        do {
            return try ControlClient(path: directory.controlSocketPath).request(method, params: .object(params), timeout: timeout)
        } catch let error as NotRunning {
            Output.note("lanbridge: \(notRunning ?? "\(error)")")
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
    }

    /// `ask`, where no daemon means the command cannot be done: `notRunning` is said, exit 69.
    static func ask(_ directory: StateDirectory, _ method: ControlMethod, _ params: [String: JSONValue] = [:], notRunning: String) throws -> JSONValue {
        guard let answer = try ask(directory, method, params) else {
            Output.note("lanbridge: \(notRunning)")
            throw ExitCode(69)
        }
        return answer
    }
}
