/// One response from the canvas host on its way to the node, read as HTTP/1.1 (RFC 9112) rather
/// than passed as bytes: the head is parsed and rebuilt, and the body is framed (by
/// `Content-Length`, chunked, or the connection's end) so that the relay knows where it ends and
/// filters the body itself, not its framing:
///
/// - the upstream capability is swapped for the node's in every header value and in the
///   de-chunked body (`CanvasResponseFilter`), so a capability split across chunks cannot pass;
/// - a chunked body is sent on as chunks of the relay's own making;
/// - absolute URLs of the canvas host's own origins in `Location` and `Content-Location` point at
///   the relay instead (a phone cannot follow `http://127.0.0.1:18789/…`);
/// - hop-by-hop headers (and those `Connection` names) go, and the relay's own headers (the CSP)
///   are added, with `Connection: close` unless the connection is kept (`persistent`);
/// - a compressed body is refused while there is a capability to hide (the filter could not see
///   inside it), and so is any head it cannot read: 502, never a guess.
///
/// Interim answers (1xx but 101) are dropped; a 101 is handed to the caller (`CanvasExchange`),
/// which decides whether the switch is the one it asked for.
public struct CanvasResponseReader: Sendable {
    public struct Settings: Sendable {
        public var upstreamCapability: String?
        public var nodeCapability: String
        public var maxBodyBytes: Int
        public var maxHeadBytes: Int
        /// Origins the canvas host's absolute URLs use (`http://127.0.0.1:18789`), lowercase.
        public var upstreamOrigins: [String]
        /// The origin the node reached the relay at (`https://192.168.1.10:18793`).
        public var relayOrigin: String
        /// Headers the relay adds to every response.
        public var added: [(name: String, value: String)]
        /// A 401 is not passed on but reported (`.unauthorized`): the capability upstream lapsed,
        /// and the relay tries once more with a fresh one.
        public var holdUnauthorized = false
        /// The relay would keep the node's connection for another request: it is kept when the
        /// body's end is known without the host's close (a length, chunks, or no body).
        public var keepAlive = false

        public init(
            upstreamCapability: String?, nodeCapability: String, maxBodyBytes: Int, maxHeadBytes: Int,
            upstreamOrigins: [String] = [], relayOrigin: String = "", added: [(name: String, value: String)] = []
        ) {
            (self.upstreamCapability, self.nodeCapability, self.maxBodyBytes, self.maxHeadBytes) = (upstreamCapability, nodeCapability, maxBodyBytes, maxHeadBytes)
            (self.upstreamOrigins, self.relayOrigin, self.added) = (upstreamOrigins.map { $0.lowercased() }, relayOrigin, added)
        }
    }

    public struct Head: Equatable, Sendable {
        public var status: Int
        public var reason: String
        /// Lowercase names, values trimmed, in order.
        public var headers: [(name: String, value: String)]

        public static func == (a: Head, b: Head) -> Bool {
            a.status == b.status && a.reason == b.reason && a.headers.elementsEqual(b.headers) { $0 == $1 }
        }

        public func values(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }
        /// Whether a comma-separated header holds `token` (case-insensitive).
        public func lists(_ name: String, _ token: String) -> Bool {
            values(name).contains { $0.lowercased().split(separator: ",").contains { $0.trimmingSpaces == token } }
        }
    }

    public enum Event: Equatable, Sendable {
        case toNode([UInt8])
        /// The response is complete: nothing more from the host belongs to it.
        case end
        /// The host switched protocols; `rest` is what came after its head.
        case switching(Head, rest: [UInt8])
        /// The host refused the upstream capability (401, with `holdUnauthorized`): nothing went to the node.
        case unauthorized
        /// Stop and close both sides; nothing more goes to the node. `status` is set while nothing
        /// has reached the node yet, so the node can be told (502).
        case cut(reason: String, status: Int?)
    }

    private enum Chunked: Sendable {
        case size([UInt8])
        case data(Int)
        case dataEnd(Int)
        case trailers([UInt8], total: Int)
    }

    private enum Stage: Sendable {
        case head([UInt8])
        case length(Int)
        case chunked(Chunked)
        case untilClose
        case done
    }

    public let settings: Settings
    public let headRequest: Bool
    private var stage = Stage.head([])
    private var filter: CanvasResponseFilter
    private let swap: CapabilitySwap

    public init(_ settings: Settings, method: String) {
        self.settings = settings
        headRequest = method == "HEAD"
        filter = CanvasResponseFilter(upstream: settings.upstreamCapability, replacement: settings.nodeCapability, maxBytes: settings.maxBodyBytes)
        swap = CapabilitySwap(upstream: settings.upstreamCapability, replacement: settings.nodeCapability)
    }

    public var isDone: Bool { if case .done = stage { true } else { false } }
    /// Whether anything has gone to the node yet.
    public private(set) var started = false
    /// The head sent to the node kept its connection (no `Connection: close`): once the response
    /// ends the node may send another request on it.
    public private(set) var persistent = false

    public mutating func read(_ bytes: [UInt8]) -> [Event] {
        var events: [Event] = []
        var input = bytes[...]
        while !input.isEmpty {
            switch stage {
            case var .head(buffer):
                stage = .done  // so that `buffer` is mutated in place, not copied (set again on every way out)
                let before = buffer.count
                // Only the head's bytes are taken: the rest may be body, or another head (1xx).
                let searchFrom = max(0, before - 3)
                buffer.append(contentsOf: input)
                guard let end = CanvasRequest.endOfHead(buffer, from: searchFrom) else {
                    if buffer.count > settings.maxHeadBytes { return events + [cut("upstream_head_too_large")] }
                    stage = .head(buffer)
                    return events
                }
                guard end <= settings.maxHeadBytes else { return events + [cut("upstream_head_too_large")] }
                input = input.dropFirst(end - before)
                let head: Head
                do { head = try Self.parseHead(buffer[..<end]) } catch { return events + [cut(error.reason)] }
                if head.status == 101 {
                    stage = .done
                    return events + [.switching(head, rest: Array(input))]
                }
                if (100..<200).contains(head.status) {
                    stage = .head([])  // interim: dropped
                    continue
                }
                if head.status == 401, settings.holdUnauthorized {
                    stage = .done
                    return events + [.unauthorized]
                }
                switch begin(head) {
                case let .success(out):
                    events.append(.toNode(out))
                    started = true
                    if case .done = stage { return events + [.end] }
                case let .failure(refusal):
                    return events + [cut(refusal.reason)]
                }
            case let .length(left):
                let take = min(left, input.count)
                guard let out = pass(Array(input.prefix(take)), &events) else { return events }
                input = input.dropFirst(take)
                if !out.isEmpty { events.append(.toNode(out)) }
                if left == take {
                    let rest = filter.finish()
                    if !rest.isEmpty { events.append(.toNode(rest)) }
                    stage = .done
                    return events + [.end]
                }
                stage = .length(left - take)
            case .untilClose:
                guard let out = pass(Array(input), &events) else { return events }
                input = []
                if !out.isEmpty { events.append(.toNode(out)) }
            case let .chunked(state):
                stage = .done  // as above; readChunked sets it
                if !readChunked(state, &input, &events) { return events }
                if case .done = stage { return events + [.end] }
            case .done:
                // After the end: the host says more than it was asked for. Nothing of it is passed.
                return events
            }
        }
        return events
    }

    /// Whether a read that is all body (framed by its length or the close) can go on as it came,
    /// with no copy; counted if so. The response may be complete after it (`isDone`).
    public mutating func passesUnchanged(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch stage {
        case let .length(left) where bytes.count <= left:
            guard filter.passesUnchanged(bytes) else { return false }
            stage = bytes.count == left ? .done : .length(left - bytes.count)
            return true
        case .untilClose:
            return filter.passesUnchanged(bytes)
        default:
            return false
        }
    }

    /// The host closed its side.
    public mutating func hostClosed() -> [Event] {
        switch stage {
        case .untilClose:
            stage = .done
            let rest = filter.finish()
            return (rest.isEmpty ? [] : [.toNode(rest)]) + [.end]
        case .done:
            return []
        default:
            // Cut short: the node must not take a truncated body for a whole one.
            stage = .done
            return [cut("upstream_closed_early")]
        }
    }

    // MARK: - The head

    public struct Refusal: Error, Equatable {
        public let reason: String
    }

    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(Refusal) -> Head {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Refusal(reason: "upstream_bad_head") }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines.last == "", lines[lines.count - 2] == "" else { throw Refusal(reason: "upstream_bad_head") }
        lines.removeLast(2)
        let status = lines.removeFirst()
        let parts = status.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].utf8.count == 3,
            let code = Int(parts[1]), (100...599).contains(code)
        else { throw Refusal(reason: "upstream_bad_head") }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon > line.startIndex, line[..<colon].utf8.allSatisfy(CanvasRequest.isTokenByte) else {
                throw Refusal(reason: "upstream_bad_head")  // obs-fold, a bare LF, a space before the colon
            }
            let value = line[line.index(after: colon)...].trimmingSpaces
            guard !value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else { throw Refusal(reason: "upstream_bad_head") }
            headers.append((line[..<colon].lowercased(), value))
        }
        let reason = parts.count > 2 ? String(parts[2]) : ""
        guard !reason.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else { throw Refusal(reason: "upstream_bad_head") }
        return Head(status: code, reason: reason, headers: headers)
    }

    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]

    /// Decides the body's framing and builds the head the node gets.
    private mutating func begin(_ head: Head) -> Result<[UInt8], Refusal> {
        let lengths = Set(head.values("content-length"))
        let encodings = head.values("transfer-encoding").flatMap { $0.lowercased().split(separator: ",").map(\.trimmingSpaces) }
        guard encodings.allSatisfy({ $0 == "chunked" }), encodings.count <= 1 else { return .failure(Refusal(reason: "upstream_transfer_encoding")) }
        if !swap.isEmpty, head.values("content-encoding").contains(where: { $0.lowercased() != "identity" }) {
            return .failure(Refusal(reason: "upstream_content_encoding"))
        }
        let chunked = encodings == ["chunked"]
        var length: Int?
        if !chunked, !lengths.isEmpty {
            guard lengths.count == 1, let only = lengths.first, only.utf8.count <= 15, only.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int(only)
            else { return .failure(Refusal(reason: "upstream_content_length")) }
            length = value
        }
        let bodyless = headRequest || head.status == 204 || head.status == 304
        if !bodyless, let length, length > settings.maxBodyBytes { return .failure(Refusal(reason: "canvasMaxResponseBytes")) }

        let named = Set(head.values("connection").flatMap { $0.lowercased().split(separator: ",").map(\.trimmingSpaces) })
        // The reason phrase too: a host may print anything there (the fuzz target found one).
        guard let reason = swap.applied(Array(head.reason.utf8)) else { return .failure(Refusal(reason: "upstream_capability")) }
        var out = "HTTP/1.1 \(head.status) \(String(decoding: reason, as: UTF8.self))\r\n"
        for (name, value) in head.headers where !Self.hopByHop.contains(name) && !named.contains(name) {
            // Framing is the relay's: a chunked body's Content-Length (if the host sent both) goes.
            if name == "content-length", chunked { continue }
            var value = value
            if name == "location" || name == "content-location" { value = relayed(value) }
            guard let swapped = swap.applied(Array(value.utf8)) else { return .failure(Refusal(reason: "upstream_capability")) }
            out += "\(name): \(String(decoding: swapped, as: UTF8.self))\r\n"
        }
        for (name, value) in settings.added { out += "\(name): \(value)\r\n" }
        if chunked, !bodyless { out += "transfer-encoding: chunked\r\n" }
        persistent = settings.keepAlive && (bodyless || chunked || length != nil)
        out += persistent ? "\r\n" : "Connection: close\r\n\r\n"
        stage = bodyless ? .done : chunked ? .chunked(.size([])) : length.map { $0 == 0 ? Stage.done : .length($0) } ?? .untilClose
        return .success(Array(out.utf8))
    }

    /// An absolute URL on the canvas host's own origin, on the relay's instead.
    private func relayed(_ value: String) -> String {
        let lower = value.lowercased()
        for origin in settings.upstreamOrigins {
            let bare = origin.drop { $0 != "/" }  // "//127.0.0.1:18789", a scheme-relative reference
            for prefix in [origin, String(bare)] where !prefix.isEmpty && lower.hasPrefix(prefix) {
                let rest = value.utf8.dropFirst(prefix.utf8.count)
                if rest.isEmpty || [UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(rest.first ?? 0) {
                    return settings.relayOrigin + String(decoding: rest, as: UTF8.self)
                }
            }
        }
        return value
    }

    // MARK: - The body

    /// Body bytes through the filter; nil (and a cut appended) when it stops the response.
    private mutating func pass(_ bytes: [UInt8], _ events: inout [Event]) -> [UInt8]? {
        switch filter.pass(bytes) {
        case let .pass(out): return out
        case let .cut(reason):
            stage = .done
            events.append(cut(reason))
            return nil
        }
    }

    /// Reads as much chunked framing as `input` holds; false when the response was cut.
    private mutating func readChunked(_ state: Chunked, _ input: inout ArraySlice<UInt8>, _ events: inout [Event]) -> Bool {
        var state = state
        while !input.isEmpty {
            switch state {
            case var .size(line):
                guard let lf = input.firstIndex(of: 0x0A) else {
                    line.append(contentsOf: input)
                    input = []
                    guard line.count <= 1024 else { events.append(cut("upstream_chunk")); return false }
                    state = .size(line)
                    continue
                }
                line.append(contentsOf: input[..<lf])
                input = input[(lf + 1)...]
                guard line.count <= 1024, line.last == 0x0D else { events.append(cut("upstream_chunk")); return false }
                line.removeLast()
                // The size, then extensions (ignored) after a ';'.
                let digits = line.prefix { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
                guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy(CanvasHex.isHexDigit),
                    let size = Int(String(decoding: digits, as: UTF8.self), radix: 16)
                else { events.append(cut("upstream_chunk")); return false }
                state = size == 0 ? .trailers([], total: 0) : .data(size)
            case let .data(left):
                let take = min(left, input.count)
                guard let out = pass(Array(input.prefix(take)), &events) else { return false }
                input = input.dropFirst(take)
                if !out.isEmpty { events.append(.toNode(Self.chunk(out))) }
                state = left == take ? .dataEnd(0) : .data(left - take)
            case let .dataEnd(seen):
                let expected: UInt8 = seen == 0 ? 0x0D : 0x0A
                guard input.first == expected else { events.append(cut("upstream_chunk")); return false }
                input = input.dropFirst()
                state = seen == 0 ? .dataEnd(1) : .size([])
            case let .trailers(line, total):
                // Trailers are read and dropped (none is passed on), within the head's bound.
                guard let lf = input.firstIndex(of: 0x0A) else {
                    guard total + input.count <= settings.maxHeadBytes else { events.append(cut("upstream_chunk")); return false }
                    state = .trailers(line + input, total: total + input.count)
                    input = []
                    continue
                }
                let whole = line + input[..<lf]
                input = input[(lf + 1)...]
                guard whole.last == 0x0D, total + whole.count <= settings.maxHeadBytes else { events.append(cut("upstream_chunk")); return false }
                if whole.count == 1 {
                    let rest = filter.finish()
                    if !rest.isEmpty { events.append(.toNode(Self.chunk(rest))) }
                    events.append(.toNode(Array("0\r\n\r\n".utf8)))
                    stage = .done
                    return true
                }
                state = .trailers([], total: total + whole.count + 1)
            }
        }
        stage = .chunked(state)
        return true
    }

    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [0x0D, 0x0A] + bytes + [0x0D, 0x0A]
    }

    private mutating func cut(_ reason: String) -> Event {
        stage = .done
        return .cut(reason: reason, status: started ? nil : 502)
    }
}
