import NIOConcurrencyHelpers
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
    /// The connection was dropped before anything was sent: the peer is not one to talk to.
    case peerRefused(String)
    /// The server's upgrade response did not pass the caller's check.
    case responseRefused(String)

    public var description: String {
        switch self {
        case let .peerRefused(reason): "refused to talk to the listener: \(reason)"
        case let .responseRefused(reason): "refused the server's answer: \(reason)"
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

    private enum Upgrade<Upgraded: Sendable>: Sendable {
        case upgraded(Upgraded)
        case refused(NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>)
    }

    /// Where to dial.
    public enum Target: Sendable, Equatable {
        case tcp(host: String, port: Int)
        case unix(path: String)
    }

    /// Dials `target` and upgrades to WebSocket. `verifyPeer` judges the listener once connected,
    /// before a byte is written (nil: go on; a reason: close). `verifyResponse` judges the server's
    /// 101 answer (headers) before the connection is handed out.
    public static func connect(
        to target: Target, path: String, headers: [(String, String)] = [], tls: TLS? = nil,
        maxMessageSize: Int, connectTimeout: TimeAmount = .seconds(5), upgradeTimeout: TimeAmount = .seconds(10),
        verifyPeer: (@Sendable (any Channel) -> EventLoopFuture<String?>)? = nil,
        verifyResponse: (@Sendable (HTTPResponseHead) throws -> Void)? = nil
    ) async throws -> WebSocketConnection {
        try await dial(
            to: target, path: path, headers: headers, tls: tls, maxMessageSize: maxMessageSize, connectTimeout: connectTimeout,
            upgradeTimeout: upgradeTimeout, verifyPeer: verifyPeer, verifyResponse: verifyResponse
        ) { channel in
            WebSocketConnection(channel: try NIOAsyncChannel(wrappingChannelSynchronously: channel), isClient: true)
        }
    }

    /// The same, for a caller that drives the socket with its own channel handlers: `install` adds
    /// them on `group`'s event loop the moment the upgrade completes, before any frame is read.
    public static func connect(
        to target: Target, path: String, headers: [(String, String)] = [], tls: TLS? = nil, on group: any EventLoopGroup,
        maxMessageSize: Int, connectTimeout: TimeAmount = .seconds(5), upgradeTimeout: TimeAmount = .seconds(10),
        verifyPeer: (@Sendable (any Channel) -> EventLoopFuture<String?>)? = nil,
        verifyResponse: (@Sendable (HTTPResponseHead) throws -> Void)? = nil,
        install: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> any Channel {
        try await dial(
            to: target, path: path, headers: headers, tls: tls, group: group, maxMessageSize: maxMessageSize, connectTimeout: connectTimeout,
            upgradeTimeout: upgradeTimeout, verifyPeer: verifyPeer, verifyResponse: verifyResponse
        ) { channel in
            try install(channel)
            return channel
        }
    }

    private static func dial<Upgraded: Sendable>(
        to target: Target, path: String, headers: [(String, String)], tls: TLS?, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maxMessageSize: Int, connectTimeout: TimeAmount, upgradeTimeout: TimeAmount,
        verifyPeer: (@Sendable (any Channel) -> EventLoopFuture<String?>)?, verifyResponse: (@Sendable (HTTPResponseHead) throws -> Void)?,
        upgraded: @escaping @Sendable (any Channel) throws -> Upgraded
    ) async throws -> Upgraded {
        let host: String = if case let .tcp(host, _) = target { host } else { "localhost" }
        let refusal = NIOLockedValueBox<(any Error)?>(nil)
        let opened = NIOLockedValueBox<(any Channel)?>(nil)
        let sslContext = try tls.map { tls in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let file = tls.trustRootsFile { configuration.trustRoots = .file(file) }
            return try NIOSSLContext(configuration: configuration)
        }
        let hostHeader: String =
            switch target {
            case let .tcp(host, port): "\(host.contains(":") ? "[\(host)]" : host):\(port)"
            case .unix: "localhost"
            }
        var requestHeaders = HTTPHeaders([("Host", hostHeader), ("Content-Length", "0")])
        for (name, value) in headers { requestHeaders.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: requestHeaders)
        let bootstrap = ClientBootstrap(group: group).connectTimeout(connectTimeout)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<Upgrade<Upgraded>>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                opened.withLockedValue { $0 = channel }
                if let verifyPeer {
                    try channel.pipeline.syncOperations.addHandler(
                        PeerCheckHandler { channel in
                            verifyPeer(channel).map { reason in
                                if let reason { refusal.withLockedValue { $0 = WebSocketError.peerRefused(reason) } }
                                return reason
                            }
                        })
                }
                if let sslContext {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: host))
                }
                let upgrader = WebSocketClientUpgrader<Upgrade<Upgraded>>(maxFrameSize: maxMessageSize) { channel, response in
                    channel.eventLoop.makeCompletedFuture {
                        do { try verifyResponse?(response) } catch {
                            refusal.withLockedValue { $0 = WebSocketError.responseRefused("\(error)") }
                            channel.close(promise: nil)
                            throw error
                        }
                        try WebSocketConnection.addAggregator(to: channel, maxMessageSize: maxMessageSize)
                        return .upgraded(try upgraded(channel))
                    }
                }
                let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade<Upgraded>>(
                    upgradeRequestHead: head, upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture { .refused(try NIOAsyncChannel(wrappingChannelSynchronously: channel)) }
                    })
                // Bytes behind the 101 in the same read are the server's first frames (OpenClaw's
                // challenge comes at once): NIO drops them unless told to pass them on.
                var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                pipeline.leftOverBytesStrategy = .forwardBytes
                let upgraded = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
                // A listener that accepts and never answers must not wedge the caller.
                let deadline = channel.eventLoop.scheduleTask(in: upgradeTimeout) {
                    refusal.withLockedValue { $0 = $0 ?? WebSocketError.responseRefused("no answer to the upgrade within \(upgradeTimeout)") }
                    channel.close(promise: nil)
                }
                upgraded.whenComplete { _ in deadline.cancel() }
                return upgraded
            }
        }
        let result: Upgrade<Upgraded>
        do {
            let upgrade: EventLoopFuture<Upgrade<Upgraded>> =
                switch target {
                case let .tcp(host, port):
                    try await bootstrap.channelOption(.tcpOption(.tcp_nodelay), value: 1).connect(host: host, port: port, channelInitializer: initializer)
                case let .unix(path):
                    try await bootstrap.connect(unixDomainSocketPath: path, channelInitializer: initializer)
                }
            result = try await upgrade.get()
        } catch {
            // A failed upgrade leaves nothing open behind it.
            opened.withLockedValue { $0 }?.close(promise: nil)
            // Say why we hung up, not how the closed channel looked.
            if let refused = refusal.withLockedValue({ $0 }) { throw refused }
            throw error
        }
        switch result {
        case let .upgraded(upgraded):
            return upgraded
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
