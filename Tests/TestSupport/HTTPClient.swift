import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A blocking HTTP/1.1 client for loopback tests: one request per connection, body read to EOF.
public enum HTTPClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func request(_ method: String, port: Int, path: String, body: Data? = nil, host: String? = nil, timeout: TimeInterval = 60) throws -> (status: Int, body: Data) {
        let answer = try exchange(method, port: port, path: path, body: body, host: host, timeout: timeout)
        return (answer.status, answer.body)
    }

    /// As `request`, with the response's headers (names lowercased).
    public static func exchange(_ method: String, port: Int, path: String, body: Data? = nil, host: String? = nil, timeout: TimeInterval = 60) throws -> (
        status: Int, headers: [String: String], body: Data
    ) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "cannot connect to 127.0.0.1:\(port)") }
        let payload = body ?? Data()
        let head =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n"
        let bytes = Array(head.utf8) + Array(payload)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure(description: "write failed") }
            sent += n
        }
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw Failure(description: "read failed or timed out (errno \(errno))") }
            if n == 0 { break }
            response.append(contentsOf: chunk[..<n])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)),
            let lines = String(data: response[..<split.lowerBound], encoding: .utf8)?.split(separator: "\r\n"), let statusLine = lines.first,
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else {
            throw Failure(description: "not an HTTP response")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, response[split.upperBound...])
    }
}
