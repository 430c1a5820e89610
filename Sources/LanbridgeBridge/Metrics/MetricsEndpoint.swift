import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// The monitoring endpoint: `GET /metrics` (Prometheus text format) and `GET /healthz` (200 "ok",
/// or 503 and the reasons), on a loopback address unless the admin forces another. Nothing else is
/// served; request bodies are not read, and a `Host` that could be rebound gets 421 (`HostCheck`).
enum MetricsEndpoint {
    static func bind(host: String, port: Int, registry: PrometheusCollectorRegistry, driver: BridgeDriver) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(Handler(registry: registry, driver: driver))
                }
            }
            .bind(host: host, port: port).get()
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let registry: PrometheusCollectorRegistry
        let driver: BridgeDriver
        private var request: HTTPRequestHead?

        init(registry: PrometheusCollectorRegistry, driver: BridgeDriver) {
            (self.registry, self.driver) = (registry, driver)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .head(head): request = head
            case .body: break
            case .end:
                guard let head = request else { return }
                request = nil
                respond(to: head, context: context)
            }
        }

        private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
            guard HostCheck.allows(head.headers.first(name: "Host"), port: context.channel.localAddress?.port ?? -1) else {
                return write(.misdirectedRequest, "this listener answers to localhost or its IP address only\n", head: head, context: context)
            }
            guard head.method == .GET || head.method == .HEAD else {
                return write(.methodNotAllowed, "only GET\n", head: head, context: context, extra: [("Allow", "GET, HEAD")])
            }
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            guard path == "/metrics" || path == "/healthz" else { return write(.notFound, "not found: try /metrics or /healthz\n", head: head, context: context) }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            driver.snapshot().hop(to: context.eventLoop).whenComplete { result in
                let (handler, context) = loopBound.value
                guard case let .success(snapshot) = result else {
                    return handler.write(.serviceUnavailable, "the bridge is stopping\n", head: head, context: context)
                }
                if path == "/healthz" {
                    let problems = BridgeHealth.problems(snapshot)
                    handler.write(problems.isEmpty ? .ok : .serviceUnavailable,
                                  problems.isEmpty ? "ok\n" : problems.joined(separator: "\n") + "\n", head: head, context: context)
                } else {
                    handler.driver.metrics.sample(snapshot)
                    var body: [UInt8] = []
                    handler.registry.emit(into: &body)
                    handler.write(.ok, body, head: head, context: context, type: "text/plain; version=0.0.4; charset=utf-8")
                }
            }
        }

        private func write(_ status: HTTPResponseStatus, _ text: String, head: HTTPRequestHead, context: ChannelHandlerContext,
                           extra: [(String, String)] = []) {
            write(status, Array(text.utf8), head: head, context: context, type: "text/plain; charset=utf-8", extra: extra)
        }

        private func write(_ status: HTTPResponseStatus, _ body: [UInt8], head: HTTPRequestHead, context: ChannelHandlerContext,
                           type: String, extra: [(String, String)] = []) {
            var headers = HTTPHeaders([("Content-Type", type), ("Content-Length", String(body.count)), ("Cache-Control", "no-store")] + extra)
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
            let keepAlive = head.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}
