import FoundationEssentials
import LanbridgeCrypto
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The browser door (issue 64): a page the bridge serves (the shell, `browser/shell/`) turns a
/// browser into a node. Over HTTPS with a leaf of the bridge's own CA (`BrowserTLS`), it serves the
/// shell's files and, at `/node`, a WebSocket that carries the same Noise session as the nodes'
/// TCP listener, one frame per binary message (`BrowserFrames`). The page's connections are bounded
/// as the console's are; the upgrade to the node socket is admitted as a node's connection is (the
/// same admission policy and descriptor budget). It runs on the driver's loop, as the node
/// listener does (a node session's handlers live there), TLS included: unlike the relay and the
/// app door, which have threads of their own. What it pairs is labelled `browser` (or
/// `browser-unverified`).
enum BrowserDoor {
    /// The most a WebSocket message may be: one lanbridge frame.
    static let maxMessage = 0xFFFF
    /// What a connection may send before its Noise session starts: the page's requests and the upgrade.
    static let preSessionBytes = 64 << 10

    struct Parts {
        let configuration: BridgeConfiguration
        let identity: X25519.KeyPair
        let admission: Admission
        let invites: InviteCache
        let driver: BridgeDriver
        let logger: Logger
        /// The canvas relay's port, when it is on: the shell frames the canvas from there.
        var canvasPort: Int? = nil
    }

    /// Binds the door on each listen address (or the one named), if it is configured.
    static func start(_ parts: Parts) async throws -> [any Channel] {
        guard let (listen, settings) = parts.configuration.browser else { return [] }
        let tls = try BrowserTLS(source: settings.tls, names: settings.names, directory: parts.configuration.stateDirectory)
        // What the page checks the handshake against: the bridge's static key, as authentic as
        // the page itself (the same TLS connection's origin).
        // And which tier the page is, so an honest page on a self-signed certificate says so.
        var info: [String: String] = ["name": parts.configuration.name, "publicKey": Hex.encode(parts.identity.publicKey), "tier": tls.tier.rawValue]
        // Where the canvas is framed from: the relay, on the page's own name (its SNI gets this door's certificate).
        if let canvasPort = parts.canvasPort { info["canvasPort"] = String(canvasPort) }
        let policy = ShellHTTPHandler.policy(frames: parts.canvasPort.map { port in tls.names.filter { !$0.hasPrefix("*.") }.map { "https://\($0):\(port)" } } ?? [])
        var files = ShellAssets.files
        if settings.tls == .bridgeCA, let downloads = try BridgeCAFiles.downloads(directory: parts.configuration.stateDirectory) {
            files["lanbridge-root.crt"] = ShellAssets.File(contentType: "application/x-x509-ca-cert", body: downloads.crt)
            files["lanbridge.mobileconfig"] = ShellAssets.File(contentType: "application/x-apple-aspen-config", body: downloads.mobileconfig)
        }
        files["bridge.json"] = ShellAssets.File(contentType: "application/json", body: try LanbridgeJSON.compact.encode(info).withUnsafeBytes { Array($0) })
        var bound: [any Channel] = []
        var port = listen.port
        // The page's connections, before any becomes a node's session.
        let connections = HTTPConnections()
        do {
            for (index, host) in (listen.host.map { [$0] } ?? parts.configuration.listen.map(\.host)).enumerated() {
                let listener = min(index, parts.configuration.listen.count - 1)
                let chosen = port
                let channel = try await BindProblem.explaining(host: host, port: port) {
                    try await ServerBootstrap(group: parts.driver.loop)
                        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                        .serverChannelOption(.backlog, value: 256)
                        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                        .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 << 10, high: 256 << 10))
                        .childChannelInitializer { channel in
                            channel.eventLoop.makeCompletedFuture {
                                // The port is known once the first listener bound (when it was 0).
                                let port = chosen == 0 ? (channel.localAddress?.port ?? 0) : chosen
                                let check = BrowserRequestCheck(names: tls.names, port: port, files: Set(files.keys))
                                try admit(
                                    channel, listener: listener, tls: tls, check: check, files: files, policy: policy, connections: connections, parts: parts)
                            }
                        }
                        .bind(host: host, port: port).get()
                }
                bound.append(channel)
                if port == 0 { port = channel.localAddress?.port ?? 0 }
            }
        } catch {
            for channel in bound { try? await channel.close() }
            throw error
        }
        let logger = parts.logger
        // A browser's canvas frame reaches the relay by the door's names: it gets this certificate there.
        parts.driver.doorTLS?.serveBrowsers(tls)
        if let every = tls.refreshEvery {
            // Reading the admin's files and making a TLS context is file I/O and crypto: never on the core's loop.
            let refreshing = MultiThreadedEventLoopGroup.singleton.any().scheduleRepeatedTask(initialDelay: every, delay: every) { _ in
                do { try tls.refresh() } catch { logger.error("browser door: no new certificate: \(error) (the one served so far serves on)") }
            }
            // It ends with the door.
            bound.first?.closeFuture.whenComplete { _ in refreshing.cancel() }
        }
        if tls.tier == .unverified {
            logger.warning(
                "the browser door serves a self-signed certificate: a phone cannot tell this page from one a man in the middle serves, so its pairings are labelled browser-unverified (code only, no invites, display-only grants)"
            )
        }
        let urls = tls.names.filter { !$0.hasPrefix("*.") }.map { name in "https://\(name):\(port)/" }
        parts.driver.submit(.browserDoor(urls), order: .now)
        logger.info("browser door listening", metadata: ["browser": "\(urls.joined(separator: ", "))"])
        return bound
    }

    /// A connection to the door: the page's requests are bounded as the console's are (per peer,
    /// in all, evicting the busiest peer's oldest) and by the descriptor budget. Only the upgrade
    /// to the node socket is an attempt at a handshake: there the node admission decides, as for
    /// the TCP listener (its rate, its slots, its deadlines), and the connection leaves the
    /// page's table. A page load's several connections so count as one attempt, not six.
    private static func admit(
        _ channel: any Channel, listener: Int, tls: BrowserTLS, check: BrowserRequestCheck, files: [String: ShellAssets.File],
        policy: [(String, String)], connections: HTTPConnections, parts: Parts
    ) throws {
        let driver = parts.driver
        let peer = DescriptorGate.peer(of: channel.remoteAddress)
        guard let place = connections.admitted(channel, peer: peer) else {
            channel.close(promise: nil)
            return
        }
        // With OpenClaw's gateway a paired node holds a second descriptor, its socket there.
        let ticket = driver.descriptors?.admit(channel, peer: peer, cost: parts.configuration.gateway?.wire == .openclaw ? 2 : 1)
        if driver.descriptors != nil, ticket == nil {
            channel.close(promise: nil)
            return
        }
        let sync = channel.pipeline.syncOperations
        // A connection that sends nothing, or rests between requests, goes (as the console's).
        try sync.addHandler(IdleStateHandler(allTimeout: .seconds(30)), name: "browser-page-idle")
        try sync.addHandler(
            PlainOrTLS(
                tls: { sync in
                    try tlsPipeline(
                        sync, listener: listener, place: place, ticket: ticket, tls: tls, check: check, files: files, policy: policy,
                        connections: connections, parts: parts)
                },
                plain: { sync in
                    try sync.addHandler(PreAuthLimit(bytes: preSessionBytes))
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(ShellHTTPHandler(check: check, files: files, policy: policy, plain: true))
                }))
    }

    /// HTTPS: the shell's files, and the upgrade to the node socket, whose session is a node's.
    private static func tlsPipeline(
        _ sync: ChannelPipeline.SynchronousOperations, listener: Int, place: Int, ticket: DescriptorGate.Ticket?, tls: BrowserTLS,
        check: BrowserRequestCheck, files: [String: ShellAssets.File], policy: [(String, String)], connections: HTTPConnections, parts: Parts
    ) throws {
        let (configuration, driver) = (parts.configuration, parts.driver)
        try sync.addHandler(NIOSSLServerHandler(context: tls.served.context))
        try sync.addHandler(PreAuthLimit(bytes: preSessionBytes), name: "browser-pre-session")
        // What the upgrade's admission gave, for the session it starts (the channel's loop only).
        var admitted: (id: ConnectionID, handshakeTimeout: Double)?
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maxMessage,
            shouldUpgrade: { channel, head in
                let verdict = check.judge(
                    method: head.method.rawValue, uri: head.uri, host: head.headers.first(name: "Host"), origin: head.headers.first(name: "Origin"),
                    upgrade: true)
                guard verdict == .nodeSocket else { return channel.eventLoop.makeSucceededFuture(nil) }
                let address = channel.remoteAddress?.ipAddress ?? "?"
                guard case let .admit(slot, _, handshakeTimeout) = parts.admission.connection(from: address, listener: listener, close: { channel.close(promise: nil) })
                else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                connections.release(place)
                admitted = (driver.accepted(channel, slot: slot, ticket: ticket, browser: tls.tier), handshakeTimeout)
                return channel.eventLoop.makeSucceededFuture(HTTPHeaders(policy))
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    guard let (id, handshakeTimeout) = admitted else { throw ChannelError.inappropriateOperationForState }
                    try channel.pipeline.syncOperations.addHandler(BrowserFrames())
                    try NodeDoor.addSession(
                        to: channel, id: id, address: channel.remoteAddress?.ipAddress ?? "?",
                        handshakeTimeout: min(handshakeTimeout, configuration.handshakeTimeout), configuration: configuration,
                        identity: parts.identity, invites: parts.invites, invitesAllowed: tls.tier == .verified, driver: driver, logger: parts.logger)
                }
            })
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    let sync = context.pipeline.syncOperations
                    for name in [ShellHTTPHandler.name, "browser-pre-session", "browser-page-idle"] { _ = try? sync.removeHandler(name: name) }
                }
            ))
        try sync.addHandler(ShellHTTPHandler(check: check, files: files, policy: policy), name: ShellHTTPHandler.name)
    }
}
