import NIOCore
import NIOHTTP1
import NIOPosix

/// A request as the services see it: the whole of it, its body bounded by `HTTPServer.maxBody`.
struct HTTPRequest: Sendable {
    var method: HTTPMethod
    var path: String
    var query: [String: String]
    var headers: HTTPHeaders
    var body: [UInt8]
    /// The local user whose socket sent it (`LoopbackPeer`); nil when not loopback or not known.
    var peerUID: UInt32?

    init(method: HTTPMethod, uri: String, headers: HTTPHeaders, body: [UInt8] = [], peerUID: UInt32? = nil) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        (self.method, self.headers, self.body, self.peerUID) = (method, headers, body, peerUID)
        path = parts.first.map(String.init) ?? uri
        query = parts.count > 1 ? FormData.decode(Array(parts[1].utf8)) : [:]
    }

    /// The body as `application/x-www-form-urlencoded` fields.
    var form: [String: String] { FormData.decode(body) }
    func header(_ name: String) -> String? { headers.first(name: name) }
}

/// A complete answer, or the head of an event stream the service keeps writing to.
enum HTTPAnswer: Sendable {
    case reply(HTTPReply)
    case events(headers: [(String, String)], start: @Sendable (HTTPEventSink) -> Void)
}

struct HTTPReply: Sendable {
    var status: HTTPResponseStatus
    var headers: [(String, String)]
    var body: [UInt8]

    static func text(_ status: HTTPResponseStatus, _ text: String, headers: [(String, String)] = []) -> HTTPReply {
        HTTPReply(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers, body: Array(text.utf8))
    }
    static func html(_ status: HTTPResponseStatus = .ok, _ html: String, headers: [(String, String)] = []) -> HTTPReply {
        HTTPReply(status: status, headers: [("Content-Type", "text/html; charset=utf-8")] + headers, body: Array(html.utf8))
    }
    /// 303: after a POST the browser fetches `location` with GET, so a reload does not repeat the change.
    static func seeOther(_ location: String, headers: [(String, String)] = []) -> HTTPReply {
        HTTPReply(status: .seeOther, headers: [("Location", location)] + headers, body: [])
    }
}

/// Where a service writes server-sent events; safe from any thread. A client that stops reading
/// is cut off once what it has not read passes the channel's high water mark (`maxUnread`):
/// events are hints to refetch, so nothing is lost that a reconnect does not bring back.
struct HTTPEventSink: Sendable {
    static let maxUnread = 64 << 10
    let channel: any Channel
    func send(_ text: String) {
        let channel = channel
        channel.eventLoop.execute {
            guard channel.isWritable else {
                channel.close(promise: nil)
                return
            }
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text))), promise: nil)
        }
    }
    var closed: EventLoopFuture<Void> { channel.closeFuture }
    func close() { channel.close(promise: nil) }
}

/// What one listener serves: it answers a request, or says nil (not mine) and the next one is asked.
protocol HTTPService: Sendable {
    func answer(_ request: HTTPRequest) async -> HTTPAnswer?
}

/// The daemon's one HTTP listener code path (monitoring and the console): the `Host` check against
/// DNS rebinding, a bounded body, the security headers on every response, and the services in order.
enum HTTPServer {
    static let maxBody = 64 << 10

    /// Sent with every response. The console has no inline script or style; nothing may frame it.
    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    /// A request's head and body must arrive within this of the connection's start or of the
    /// previous response; bytes that trickle in do not extend it (slowloris), and an idle
    /// keep-alive connection ends with it too.
    static let requestDeadline = TimeAmount.seconds(10)

    static func bind(
        host: String, port: Int, services: [any HTTPService], limits: HTTPConnectionTable.Limits = .init(), descriptors: DescriptorGate? = nil,
        refused: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> any Channel {
        let connections = HTTPConnections(limits: limits)
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let (local, remote) = (channel.localAddress, channel.remoteAddress)
                    let uid = LoopbackPeer.isLoopback(remote) ? LoopbackPeer.uid(local: local, remote: remote) : nil
                    // On loopback every user shares 127.0.0.1: the uid is the peer.
                    let peer = uid.map { "uid:\($0)" } ?? remote?.ipAddress ?? "unknown"
                    guard connections.admit(channel, peer: peer) else {
                        refused(peer)
                        channel.close(promise: nil)
                        return
                    }
                    // Never proven: a console or a scraper holds its place as long as the budget has room.
                    if let descriptors, descriptors.admit(channel, peer: peer) == nil {
                        channel.close(promise: nil)
                        return
                    }
                    // An event stream writes a keep-alive every 25 s; anything else silent for a minute goes.
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(60)))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(Handler(services: services, peerUID: uid))
                }
            }
            .bind(host: host, port: port).get()
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let services: [any HTTPService]
        /// Who is at the other end, learned once per connection (loopback only).
        let peerUID: UInt32?
        private var head: HTTPRequestHead?
        private var body: [UInt8] = []
        private var tooLarge = false
        private var deadline: Scheduled<Void>?

        init(services: [any HTTPService], peerUID: UInt32?) { (self.services, self.peerUID) = (services, peerUID) }

        func handlerAdded(context: ChannelHandlerContext) { armDeadline(context: context) }
        func handlerRemoved(context: ChannelHandlerContext) { deadline?.cancel() }

        /// The next request must be whole by `requestDeadline` from now.
        private func armDeadline(context: ChannelHandlerContext) {
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: HTTPServer.requestDeadline) { channel.close(promise: nil) }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .head(h): (head, body, tooLarge) = (h, [], false)
            case var .body(chunk):
                if body.count + chunk.readableBytes > HTTPServer.maxBody { tooLarge = true } else { body += chunk.readBytes(length: chunk.readableBytes) ?? [] }
            case .end:
                guard let head else { return }
                self.head = nil
                deadline?.cancel()
                respond(to: head, body: body, context: context)
                body = []
            }
        }

        private func respond(to head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) {
            guard HostCheck.allows(head.headers.first(name: "Host"), port: context.channel.localAddress?.port ?? -1) else {
                return write(.text(.misdirectedRequest, "this listener answers to localhost or its IP address only\n"), head: head, context: context)
            }
            if tooLarge { return write(.text(.payloadTooLarge, "the body is over \(HTTPServer.maxBody) bytes\n"), head: head, context: context) }
            let request = HTTPRequest(method: head.method, uri: head.uri, headers: head.headers, body: body, peerUID: peerUID)
            let services = services
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.makeFutureWithTask {
                for service in services { if let answer = await service.answer(request) { return answer } }
                return .reply(.text(.notFound, "not found\n"))
            }.whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case let .success(.reply(reply)): handler.write(reply, head: head, context: context)
                case let .success(.events(headers, start)): handler.startEvents(headers: headers, head: head, context: context, start: start)
                case .failure: handler.write(.text(.internalServerError, "internal error\n"), head: head, context: context)
                }
            }
        }

        private func write(_ reply: HTTPReply, head: HTTPRequestHead, context: ChannelHandlerContext) {
            var headers = HTTPHeaders(HTTPServer.securityHeaders + reply.headers + [("Content-Length", String(reply.body.count))])
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: reply.status, headers: headers))), promise: nil)
            if head.method != .HEAD, !reply.body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil) }
            let keepAlive = head.isKeepAlive
            if keepAlive { armDeadline(context: context) }
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }

        /// The stream's head goes out now; the service writes events until either side closes.
        private func startEvents(headers: [(String, String)], head: HTTPRequestHead, context: ChannelHandlerContext, start: @Sendable (HTTPEventSink) -> Void) {
            let all = HTTPHeaders(HTTPServer.securityHeaders + [("Content-Type", "text/event-stream; charset=utf-8"), ("Connection", "close")] + headers)
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: all))), promise: nil)
            let marks = ChannelOptions.Types.WriteBufferWaterMark(low: HTTPEventSink.maxUnread / 2, high: HTTPEventSink.maxUnread)
            try? context.channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark, value: marks)
            start(HTTPEventSink(channel: context.channel))
        }
    }
}

/// `application/x-www-form-urlencoded`, as browsers send forms and query strings. A repeated name
/// keeps its last value; bytes that are not UTF-8 become U+FFFD.
enum FormData {
    static func decode(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            fields[unescape(parts[0])] = parts.count > 1 ? unescape(parts[1]) : ""
        }
        return fields
    }

    static func unescape(_ bytes: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "+") {
                out.append(0x20)
            } else if b == UInt8(ascii: "%"), i + 2 < bytes.endIndex, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) {
                out.append(hi << 4 | lo)
                i += 2
            } else {
                out.append(b)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
