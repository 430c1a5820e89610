import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

public enum WebSocketError: Error, Equatable, CustomStringConvertible {
    /// The server answered the upgrade request with something other than 101.
    case refused(status: Int, reason: String)
    /// The peer closed with a code other than 1000.
    case closed(code: String, reason: String)

    public var description: String {
        switch self {
        case let .refused(status, reason): "the server refused the WebSocket upgrade: HTTP \(status) \(reason)"
        case let .closed(code, reason): "the peer closed the WebSocket: \(code)\(reason.isEmpty ? "" : " \(reason)")"
        }
    }
}

/// Dials a WebSocket server, over TLS (`wss://`) when asked.
public enum WebSocketClient {
    /// TLS with full certificate and host-name verification, against the system's trust store or
    /// the PEM roots in `trustRootsFile`.
    public struct TLS: Sendable, Equatable {
        public var trustRootsFile: String?
        public init(trustRootsFile: String? = nil) { self.trustRootsFile = trustRootsFile }
    }

    private enum Upgrade: Sendable {
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused(NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>)
    }

    public static func connect(host: String, port: Int, path: String, headers: [(String, String)] = [], tls: TLS? = nil,
                               maxMessageSize: Int, connectTimeout: TimeAmount = .seconds(5)) async throws -> WebSocketConnection {
        let sslContext = try tls.map { tls in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let file = tls.trustRootsFile { configuration.trustRoots = .file(file) }
            return try NIOSSLContext(configuration: configuration)
        }
        var requestHeaders = HTTPHeaders([("Host", "\(host):\(port)"), ("Content-Length", "0")])
        for (name, value) in headers { requestHeaders.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: requestHeaders)
        let upgrade: EventLoopFuture<Upgrade> = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: host))
                    }
                    let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: maxMessageSize) { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try WebSocketConnection.addAggregator(to: channel, maxMessageSize: maxMessageSize)
                            return .upgraded(try NIOAsyncChannel(wrappingChannelSynchronously: channel))
                        }
                    }
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
                        upgradeRequestHead: head, upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in
                            channel.eventLoop.makeCompletedFuture { .refused(try NIOAsyncChannel(wrappingChannelSynchronously: channel)) }
                        })
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: .init(upgradeConfiguration: configuration))
                }
            }
        switch try await upgrade.get() {
        case let .upgraded(channel):
            return WebSocketConnection(channel: channel, isClient: true)
        case let .refused(channel):
            // Read the status line, for an error that says what went wrong (401: bad token).
            let status = try await channel.executeThenClose { inbound, _ -> HTTPResponseStatus? in
                for try await part in inbound { if case let .head(response) = part { return response.status } }
                return nil
            }
            throw WebSocketError.refused(status: Int(status?.code ?? 0), reason: status?.reasonPhrase ?? "no response")
        }
    }
}
