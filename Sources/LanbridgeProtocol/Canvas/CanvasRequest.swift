/// One request to the canvas relay, read from its head and decided before anything goes upstream
/// (issue 37 §1). The relay answers only `GET`/`HEAD` under the canvas and A2UI paths, and the
/// live-reload WebSocket upgrade (a complete RFC 6455 one, issue 48 §1), for a capability in the
/// path (`/__openclaw__/cap/<cap>/…`, as OpenClaw's apps build it) or in `oc_cap` (as OpenClaw's
/// live-reload script sends it).
/// Everything else is `refuse`: the relay answers 404 and sends nothing upstream.
///
/// Only named headers are passed on (`forwardedHeaders`), so `Authorization`, `Cookie`,
/// `Forwarded`, `X-Forwarded-*` and hop-by-hop headers never reach the gateway; `Accept-Encoding`
/// is dropped too, so responses come back as they are and the relay can read them.
public struct CanvasRequest: Equatable, Sendable {
    public static let capabilityPrefix = "/__openclaw__/cap/"
    public static let capabilityQuery = "oc_cap"
    public static let servedPrefixes = ["/__openclaw__/a2ui", "/__openclaw__/canvas"]
    public static let liveReloadPath = "/__openclaw__/ws"
    /// Headers a page load needs, and nothing that carries a credential or a route.
    public static let forwardedHeaders: Set<String> = [
        "accept", "accept-language", "user-agent", "if-none-match", "if-modified-since", "range", "if-range", "cache-control", "pragma",
    ]
    /// Not `Sec-WebSocket-Extensions`: compressed frames would hide what the response filter reads.
    public static let upgradeHeaders: Set<String> = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol"]

    public var method: String
    public var capability: String
    /// The path after the capability, from its `/` (`/__openclaw__/a2ui/index.html`).
    public var path: String
    /// The query without `oc_cap`, without its `?`; empty when none is left.
    public var query: String
    public var upgrade: Bool
    /// HTTP/1.1 without `Connection: close`: the node is ready to send another request on the
    /// connection once this one is answered (an upgrade never is).
    public var keepAlive: Bool
    /// Lowercase names, values as sent.
    public var headers: [(name: String, value: String)]

    public static func == (a: CanvasRequest, b: CanvasRequest) -> Bool {
        a.method == b.method && a.capability == b.capability && a.path == b.path && a.query == b.query && a.upgrade == b.upgrade
            && a.keepAlive == b.keepAlive && a.headers.elementsEqual(b.headers) { $0 == $1 }
    }

    public struct Refusal: Error, Equatable, CustomStringConvertible {
        /// A short, fixed reason (a metric label and the log's `reason`).
        public let reason: String
        public var description: String { reason }
        public init(reason: String) { self.reason = reason }
    }

    /// Reads a whole head (up to and including the blank line). Linear in its length.
    public init(head: [UInt8]) throws(Refusal) {
        guard let text = String(validating: head, as: UTF8.self) else { throw Refusal(reason: "not_utf8") }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines.last == "", lines[lines.count - 2] == "" else { throw Refusal(reason: "bad_head") }
        lines.removeLast(2)
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0" else { throw Refusal(reason: "bad_request_line") }
        method = String(requestLine[0])
        guard method == "GET" || method == "HEAD" else { throw Refusal(reason: "method") }
        var headers: [(name: String, value: String)] = []
        var hosts = 0, upgrades: [String] = [], connectionUpgrade = false, connectionClose = false
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon > line.startIndex,
                line[..<colon].utf8.allSatisfy(Self.isTokenByte)
            else { throw Refusal(reason: "bad_header") }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            guard !value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else { throw Refusal(reason: "bad_header") }
            switch name {
            case "host": hosts += 1
            case "content-length", "transfer-encoding": throw Refusal(reason: "body")
            case "upgrade": upgrades.append(value.lowercased())
            case "connection":
                let tokens = value.lowercased().split(separator: ",").map(\.trimmingSpaces)
                connectionUpgrade = connectionUpgrade || tokens.contains("upgrade")
                connectionClose = connectionClose || tokens.contains("close")
            default: break
            }
            if Self.forwardedHeaders.contains(name) || Self.upgradeHeaders.contains(name) { headers.append((name, value)) }
        }
        guard hosts == 1 else { throw Refusal(reason: "host") }
        // An upgrade is a whole RFC 6455 opening handshake (§4.1) or nothing: half of one is how a
        // node would get a keep-alive host to read what follows as requests of its own.
        upgrade = !upgrades.isEmpty || connectionUpgrade
        keepAlive = !upgrade && !connectionClose && requestLine[2] == "HTTP/1.1"
        if upgrade {
            func one(_ name: String) -> String? {
                let values = headers.filter { $0.name == name }
                return values.count == 1 ? values[0].value : nil
            }
            guard upgrades == ["websocket"], connectionUpgrade, requestLine[2] == "HTTP/1.1",
                let key = one("sec-websocket-key"), WebSocketAccept.isValidKey(key), one("sec-websocket-version") == "13"
            else {
                throw Refusal(reason: "upgrade")
            }
        } else {
            headers.removeAll { Self.upgradeHeaders.contains($0.name) }
        }
        self.headers = headers

        let target = requestLine[1]
        // Visible ASCII only, query included: a bare LF or CR in a query would end the line upstream
        // (the fuzz target found one passing through).
        guard target.hasPrefix("/"), !target.contains("#"), target.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Refusal(reason: "target")
        }
        let pathPart: Substring, queryPart: Substring
        if let q = target.firstIndex(of: "?") { (pathPart, queryPart) = (target[..<q], target[target.index(after: q)...]) } else { (pathPart, queryPart) = (target, "") }
        try Self.checkPath(pathPart)
        // The query: `oc_cap` comes out; the rest passes as it came.
        var fromQuery: String?
        var kept: [Substring] = []
        for item in queryPart.split(separator: "&", omittingEmptySubsequences: true) {
            if item.hasPrefix(Self.capabilityQuery + "=") {
                guard fromQuery == nil else { throw Refusal(reason: "capability") }
                fromQuery = String(item.dropFirst(Self.capabilityQuery.utf8.count + 1))
            } else {
                kept.append(item)
            }
        }
        query = kept.joined(separator: "&")
        var path = String(pathPart)
        var capability = fromQuery
        if path.hasPrefix(Self.capabilityPrefix) {
            let rest = path.dropFirst(Self.capabilityPrefix.utf8.count)
            guard let slash = rest.firstIndex(of: "/"), slash > rest.startIndex else { throw Refusal(reason: "capability") }
            let inPath = String(rest[..<slash])
            guard capability == nil || capability == inPath else { throw Refusal(reason: "capability") }
            capability = inPath
            path = String(rest[slash...])
        }
        guard let capability, !capability.isEmpty, capability.utf8.count <= 128, capability.utf8.allSatisfy(Self.isCapabilityByte) else {
            throw Refusal(reason: "no_capability")
        }
        self.capability = capability
        self.path = path
        if upgrade {
            guard path == Self.liveReloadPath, method == "GET" else { throw Refusal(reason: "path") }
        } else {
            guard Self.servedPrefixes.contains(where: { path == $0 || path.hasPrefix($0 + "/") }) else { throw Refusal(reason: "path") }
        }
    }

    /// No dot segments, no encoded dots, slashes, backslashes or NULs, no backslash, no empty
    /// segment: what could be read as another path upstream is refused here.
    static func checkPath(_ path: Substring) throws(Refusal) {
        let bytes = Array(path.utf8)
        guard !bytes.contains(0x5C) else { throw Refusal(reason: "traversal") }
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count else { throw Refusal(reason: "bad_escape") }
                let escaped = String(decoding: bytes[(i + 1)...(i + 2)], as: UTF8.self).lowercased()
                guard escaped.utf8.allSatisfy({ CanvasHex.isHexDigit($0) }) else { throw Refusal(reason: "bad_escape") }
                if ["2e", "2f", "5c", "00", "25"].contains(escaped) { throw Refusal(reason: "traversal") }
                i += 3
                continue
            }
            guard bytes[i] > 0x20, bytes[i] != 0x7F else { throw Refusal(reason: "target") }
            i += 1
        }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            if segment == "." || segment == ".." { throw Refusal(reason: "traversal") }
        }
        if path.contains("//") { throw Refusal(reason: "traversal") }
    }

    /// The head sent upstream: the path under the upstream's capability (openclaw) or as it is.
    public func upstreamHead(host: String, upstreamCapability: String?) -> String {
        var target = upstreamCapability.map { "\(Self.capabilityPrefix)\($0)\(path)" } ?? path
        if !query.isEmpty { target += "?" + query }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += upgrade ? "Connection: Upgrade\r\nUpgrade: websocket\r\n" : "Connection: close\r\nAccept-Encoding: identity\r\n"
        return head + "\r\n"
    }

    /// Where a head ends (after its blank line) in `bytes`, looking from `from` on; nil if not yet.
    public static func endOfHead(_ bytes: [UInt8], from: Int) -> Int? {
        var i = max(from, 3)
        while i < bytes.count {
            if bytes[i] == 0x0A, bytes[i - 1] == 0x0D, bytes[i - 2] == 0x0A, bytes[i - 3] == 0x0D { return i + 1 }
            i += 1
        }
        return nil
    }

    static func isTokenByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || "!#$%&'*+-.^_`|~".utf8.contains(b)
    }

    /// base64url, and nothing a path or a log line could be confused by.
    public static func isCapabilityByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x5F
    }
}

enum CanvasHex {
    static func isHexDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x61...0x66).contains(b) || (0x41...0x46).contains(b) }
}

extension StringProtocol {
    public var trimmingSpaces: String {
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
