import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A small HTTP/1.1 server that upgrades to WebSocket when `shouldUpgrade` agrees (with the extra
/// headers it returns for the 101 answer) and answers everything else through `respond`. It
/// listens on a TCP port or a Unix socket. The reference gateway is built on it.
public enum WebSocketServer {
    public typealias HTTPChannel = NIOAsyncChannel<HTTPServerRequestPart, HTTPPart<HTTPResponseHead, ByteBuffer>>

    public enum Accepted: Sendable {
        /// The request, and the extra headers the 101 answer carried.
        case webSocket(WebSocketConnection, HTTPRequestHead, HTTPHeaders)
        case http(HTTPChannel)
    }

    public struct HTTPResponse: Sendable {
        public var status: HTTPResponseStatus
        public var contentType: String
        public var body: [UInt8]
        public init(status: HTTPResponseStatus, contentType: String = "application/json", body: [UInt8]) {
            (self.status, self.contentType, self.body) = (status, contentType, body)
        }
    }

    public enum Address: Sendable {
        case tcp(host: String, port: Int)
        case unix(path: String)
    }

    /// `shouldUpgrade` returns the extra headers of the 101 answer, or nil to answer as plain HTTP.
    public static func bind(
        _ address: Address, maxMessageSize: Int,
        shouldUpgrade: @escaping @Sendable (HTTPRequestHead) -> HTTPHeaders?
    ) async throws -> NIOAsyncChannel<EventLoopFuture<Accepted>, Never> {
        let initializer: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<Accepted>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                let answered = NIOLockedValueBox(HTTPHeaders())  // one connection's
                let upgrader = NIOTypedWebSocketServerUpgrader<Accepted>(
                    maxFrameSize: maxMessageSize,
                    shouldUpgrade: { channel, head in
                        let headers = shouldUpgrade(head)
                        answered.withLockedValue { $0 = headers ?? HTTPHeaders() }
                        return channel.eventLoop.makeSucceededFuture(headers)
                    },
                    upgradePipelineHandler: { channel, head in
                        channel.eventLoop.makeCompletedFuture {
                            try WebSocketConnection.addAggregator(to: channel, maxMessageSize: maxMessageSize)
                            return .webSocket(
                                WebSocketConnection(channel: try NIOAsyncChannel(wrappingChannelSynchronously: channel), isClient: false),
                                head, answered.withLockedValue { $0 })
                        }
                    })
                let configuration = NIOTypedHTTPServerUpgradeConfiguration<Accepted>(
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(HTTPByteBufferResponsePartHandler())
                            return .http(try NIOAsyncChannel(wrappingChannelSynchronously: channel))
                        }
                    })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        switch address {
        case let .tcp(host, port):
            return try await bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .bind(host: host, port: port, childChannelInitializer: initializer)
        case let .unix(path):
            return try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
        }
    }

    /// Answers plain HTTP requests on one connection, one at a time, until the client closes.
    public static func serve(
        _ channel: HTTPChannel, maxBodySize: Int = 1 << 20,
        _ respond: @Sendable (HTTPRequestHead, [UInt8]) async -> HTTPResponse
    ) async throws {
        try await channel.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: [UInt8] = []
            for try await part in inbound {
                switch part {
                case let .head(h): (head, body) = (h, [])
                case let .body(buffer):
                    guard body.count + buffer.readableBytes <= maxBodySize else { return }
                    body += Array(buffer: buffer)
                case .end:
                    guard let request = head else { return }
                    let response = await respond(request, body)
                    var headers = HTTPHeaders([("Content-Type", response.contentType), ("Content-Length", "\(response.body.count)")])
                    if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
                    try await outbound.write(.head(HTTPResponseHead(version: request.version, status: response.status, headers: headers)))
                    try await outbound.write(.body(ByteBuffer(bytes: response.body)))
                    try await outbound.write(.end(nil))
                    if !request.isKeepAlive { return }
                }
            }
        }
    }
}

/// Lets the async HTTP channel write `ByteBuffer` bodies (NIO's HTTP encoder wants IOData).
final class HTTPByteBufferResponsePartHandler: ChannelOutboundHandler {
    typealias OutboundIn = HTTPPart<HTTPResponseHead, ByteBuffer>
    typealias OutboundOut = HTTPServerResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        switch part {
        case let .head(head): context.write(wrapOutboundOut(.head(head)), promise: promise)
        case let .body(buffer): context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: promise)
        case let .end(trailers): context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        }
    }
}
