import LanbridgeProtocol
import NIOCore
import NIOHTTP1

/// The browser door's plain HTTP requests: the shell's files, with the strict policy headers, and
/// the refusals `BrowserRequestCheck` decides (the upgrade to the node socket never reaches it: it
/// is removed once the upgrade is done).
final class ShellHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    static let name = "browser-shell-http"
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Every answer's headers: nothing inline runs, nothing frames the shell, no referrer leaves
    /// it; the only frame it may hold is the canvas relay's (`frames`: its origins).
    static func policy(frames: [String]) -> [(String, String)] {
        [
            (
                "Content-Security-Policy",
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; worker-src 'self'; "
                    + "frame-src \(frames.isEmpty ? "'none'" : frames.joined(separator: " ")); "
                    + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
            )
        ] + common
    }

    private static let common: [(String, String)] = [
        ("Referrer-Policy", "no-referrer"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Permissions-Policy", "camera=(self), microphone=(self), geolocation=(self), screen-wake-lock=(self)"),
        ("Cache-Control", "no-cache"),
    ]

    private let check: BrowserRequestCheck
    private let files: [String: ShellAssets.File]
    private let policy: [(String, String)]
    private let plain: Bool

    /// `plain`: the connection has no TLS (only the install page and the root's downloads).
    init(check: BrowserRequestCheck, files: [String: ShellAssets.File], policy: [(String, String)], plain: Bool = false) {
        (self.check, self.files, self.policy, self.plain) = (check, files, policy, plain)
    }

    /// The page's connection rested past its idle bound (`BrowserDoor`'s IdleStateHandler).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case let .head(head) = unwrapInboundIn(data) else { return }
        let verdict = check.judge(
            method: head.method.rawValue, uri: head.uri, host: head.headers.first(name: "Host"), origin: head.headers.first(name: "Origin"),
            upgrade: head.headers.first(name: "Upgrade")?.lowercased() == "websocket", plain: plain)
        switch verdict {
        case let .asset(name):
            guard let asset = files[name] else { return answer(context, head, status: .notFound, type: "text/plain", body: Array("not found\n".utf8), keepAlive: false) }
            answer(context, head, status: .ok, type: asset.contentType, body: head.method == .HEAD ? [] : asset.body, keepAlive: head.isKeepAlive)
        case .nodeSocket:
            // The upgrader answers a good upgrade; this is one it refused (a bad WebSocket handshake).
            answer(context, head, status: .badRequest, type: "text/plain", body: Array("a bad WebSocket upgrade\n".utf8), keepAlive: false)
        case let .redirect(location):
            answer(context, head, status: .movedPermanently, type: "text/plain", body: Array("\(location)\n".utf8), keepAlive: false, extra: [("Location", location)])
        case let .refuse(status, reason):
            answer(context, head, status: HTTPResponseStatus(statusCode: status), type: "text/plain", body: Array("\(reason)\n".utf8), keepAlive: false)
        }
    }

    private func answer(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, status: HTTPResponseStatus, type: String, body: [UInt8], keepAlive: Bool,
        extra: [(String, String)] = []
    ) {
        var headers = HTTPHeaders(policy + extra + [("Content-Type", type), ("Content-Length", String(body.count))])
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
