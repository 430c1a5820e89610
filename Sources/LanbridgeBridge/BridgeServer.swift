import Foundation
import LanbridgeCrypto
import LanbridgeDiscovery
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOCore
import NIOPosix

/// `lanbridge serve`: listens, runs the Noise handshake on each connection, and hands sessions to
/// the `Bridge` actor. Returns when the task is cancelled (SIGTERM/SIGINT), after closing everything.
public enum BridgeServer {
    public static let version = "0.6.0"

    /// What a reload (SIGHUP) reads again: the config file and the gateway token.
    public struct Reloaded: Sendable {
        public var settings: BridgeSettings
        public var gatewayToken: SecureBytes?
        public init(settings: BridgeSettings, gatewayToken: SecureBytes?) { (self.settings, self.gatewayToken) = (settings, gatewayToken) }
    }

    /// `hangups` yields once per SIGHUP; `reload` reads the files again (throwing keeps the
    /// running settings).
    public static func run(configuration: BridgeConfiguration, logger: Logger, hangups: AsyncStream<Void>? = nil,
                           reload: (@Sendable () throws -> Reloaded)? = nil, onListening: @Sendable (Int) -> Void = { _ in }) async throws {
        try configuration.stateDirectory.prepare()
        try configuration.stateDirectory.checkNotWritableByOthers()
        // Before anything else is touched: a second daemon must not disturb the first one's files.
        let daemonLock = try DaemonLock(directory: configuration.stateDirectory)
        defer { withExtendedLifetime(daemonLock) {} }
        if let problem = configuration.stateDirectory.privacyProblem() { logger.warning("state directory \(configuration.stateDirectory.url.path): \(problem)") }
        let identity = try IdentityStore(directory: configuration.stateDirectory).loadOrCreate()
        // Watch before the first read, so no change the CLI makes from here on goes unseen.
        let watcher = try StoreWatcher(directory: configuration.stateDirectory.url,
                                       files: [PairingStore.pairedFileName, PairingStore.pendingFileName, PairingStore.invitesFileName])
        defer { watcher.stop() }
        let initial = try PairingStore(directory: configuration.stateDirectory).read()  // refuse to start on a corrupt store
        // Room for the largest result the bridge relays, so an oversized one is refused with
        // PAYLOAD_TOO_LARGE rather than by dropping the node.
        let configuration = {
            var c = configuration
            c.limits.maxMessageSize = max(c.limits.maxMessageSize, c.settings.limits.maxResultBytes * 2)
            return c
        }()
        // Both are consulted from the first accept on, so they exist before the listener does.
        let admission = Admission(limits: configuration.admission, logger: logger)
        let invites = InviteCache(store: PairingStore(directory: configuration.stateDirectory))
        invites.replace(with: initial)
        let server = try await BindProblem.explaining(host: configuration.bind.host, port: configuration.port) { try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: configuration.bind.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let address = channel.remoteAddress?.ipAddress ?? "?"
                    let decision = admission.connection(from: address, close: { channel.close(promise: nil) })
                    guard case let .admit(slot, _, handshakeTimeout) = decision else {
                        channel.close(promise: nil)
                        return (try NIOAsyncChannel<SecureChannelInbound, [UInt8]>(wrappingChannelSynchronously: channel), address, Admission.Slot?.none)
                    }
                    let session = SecureSession(responderWith: identity, limits: configuration.limits,
                                                inviteLookup: { id in invites.psk(for: id) })
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000))))
                    try sync.addHandler(IdleCloser(logger: logger))
                    let timeout = min(handshakeTimeout, configuration.handshakeTimeout)
                    try sync.addHandler(SecureChannelHandler(responder: session, handshakeTimeout: .milliseconds(Int64(timeout * 1000)), logger: logger))
                    return (try NIOAsyncChannel<SecureChannelInbound, [UInt8]>(wrappingChannelSynchronously: channel), address, Admission.Slot?.some(slot))
                }
            } }
        let port = server.channel.localAddress?.port ?? configuration.port
        // An IPv6 address in brackets, so "host:port" splits at the right colon.
        let listening = configuration.bind.host.contains(":") ? "[\(configuration.bind.host)]:\(port)" : "\(configuration.bind.host):\(port)"
        let bridge = Bridge(configuration: configuration, identity: identity, listening: [listening], initial: initial,
                            admission: admission, invites: invites, logger: logger)
        await bridge.publishRuntime()
        logger.info("lanbridge listening", metadata: [
            "address": "\(listening)", "name": "\(configuration.name)",
            "fingerprint": "\(Fingerprint(publicKey: identity.publicKey))", "state": "\(configuration.stateDirectory.url.path)",
        ])
        onListening(port)

        let publisher = advertise(configuration, port: port, fingerprint: Fingerprint(publicKey: identity.publicKey), bridge: bridge, logger: logger)
        let link = configuration.gateway.map {
            GatewayLink($0, bridge: bridge, maxMessageSize: configuration.settings.limits.maxResultBytes * 2 + (1 << 20), logger: logger)
        }
        if let link { await bridge.attach(link) } else { await bridge.setGatewayStatus("off") }
        let hello: JSONValue = ["bridgeName": .string(configuration.name), "fingerprint": .string(Fingerprint(publicKey: identity.publicKey).description),
                                "protocol": 1, "version": .string(BridgeServer.version)]
        let controlPath = configuration.stateDirectory.file(ControlSocket.fileName).path
        let control = configuration.controlSocket ? try await ControlSocket.bind(path: controlPath, bridge: bridge, logger: logger) : nil
        if control != nil { await bridge.setControlSocket(controlPath) }

        // Shutdown (cancellation) closes the listener; the accept loop then ends, the timers and the
        // watcher stop, and the bridge closes every connection and removes runtime.json.
        do {
            try await withTaskCancellationHandler {
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask {
                        for await _ in watcher.changes() { await bridge.storeChanged() }
                    }
                    if let hangups, let reload {
                        group.addTask {
                            var current = Reloaded(settings: configuration.settings, gatewayToken: configuration.gateway?.token)
                            for await _ in hangups {
                                do {
                                    let next = try reload()
                                    let changes = Reloaded.changes(from: current, to: next)
                                    await bridge.reload(next.settings)
                                    if let token = next.gatewayToken, changes.contains("gateway token") { link?.replaceToken(token) }
                                    logger.notice(changes.isEmpty ? "reloaded: nothing changed" : "reloaded: \(changes.joined(separator: ", ")) changed")
                                    if next.settings.gateway != current.settings.gateway || next.settings.admission != current.settings.admission {
                                        logger.warning("the gateway's URL and options and the admission limits apply after a restart")
                                    }
                                    current = next
                                } catch {
                                    logger.error("reload failed, keeping the running settings: \(error)")
                                }
                            }
                        }
                    }
                    if let link {
                        group.addTask { await link.run(hello: hello) }
                    }
                    if let control {
                        group.addTask {
                            try? await control.executeThenClose { inbound in
                                try await withThrowingDiscardingTaskGroup { connections in
                                    for try await connection in inbound {
                                        connections.addTask { await ControlSocket.serve(connection, bridge: bridge, logger: logger) }
                                    }
                                }
                            }
                        }
                    }
                    group.addTask {
                        var lastPing = Date()
                        while true {
                            try? await Task.sleep(for: .seconds(1))
                            if Task.isCancelled { return }
                            admission.tick(now: Date())
                            await bridge.tick(now: Date())
                            if Date().timeIntervalSince(lastPing) >= configuration.pingInterval {
                                lastPing = Date()
                                await bridge.pingAll()
                            }
                        }
                    }
                    try await server.executeThenClose { inbound in
                        for try await (connection, address, slot) in inbound {
                            guard let slot else { continue }
                            group.addTask { await serve(connection, address: address, slot: slot, bridge: bridge) }
                        }
                    }
                    group.cancelAll()
                }
            } onCancel: {
                server.channel.close(promise: nil)
                control?.channel.close(promise: nil)
            }
        } catch where Task.isCancelled {
            // Asked to stop: a clean exit.
        }
        publisher?.stop()  // withdraw first, so peers see the bridge go at once
        if control != nil { unlink(controlPath) }
        await bridge.shutdown()
        logger.info("lanbridge stopped")
    }

    /// Starts advertising, unless turned off. A missing avahi-daemon is a warning, never a reason not to serve.
    private static func advertise(_ configuration: BridgeConfiguration, port: Int, fingerprint: Fingerprint, bridge: Bridge, logger: Logger) -> AvahiPublisher? {
        guard configuration.mdns else {
            Task { await bridge.setAdvertising("off", name: nil) }
            return nil
        }
        var interface: Int32?
        if case let .address(address) = configuration.bind {
            interface = NetworkInterfaces.index(of: address)
            if interface == nil { logger.warning("no interface carries \(address); advertising on all of them") }
        } else if configuration.bind == .loopback {
            interface = NetworkInterfaces.index(of: "127.0.0.1")
        }
        do {
            let publisher = try AvahiPublisher(name: configuration.name, port: port,
                                               advertisement: BridgeAdvertisement(shortFingerprint: fingerprint.short, name: configuration.name),
                                               interfaceIndex: interface, logger: logger)
            publisher.onStatus = { status in
                Task {
                    switch status {
                    case .waitingForDaemon: await bridge.setAdvertising("waiting for avahi-daemon", name: nil)
                    case let .registering(name): await bridge.setAdvertising("registering", name: name)
                    case let .published(name): await bridge.setAdvertising("published", name: name)
                    case let .failed(why): await bridge.setAdvertising("failed: \(why)", name: nil)
                    }
                }
            }
            try publisher.start()
            return publisher
        } catch {
            logger.warning("mDNS advertising unavailable (\(error)); nodes can still connect by address")
            Task { await bridge.setAdvertising("failed: \(error)", name: nil) }
            return nil
        }
    }

    private static func serve(_ connection: NIOAsyncChannel<SecureChannelInbound, [UInt8]>, address: String, slot: Admission.Slot, bridge: Bridge) async {
        var id: Int?
        do {
            try await connection.executeThenClose { inbound, outbound in
                for try await event in inbound {
                    switch event {
                    case let .established(result):
                        id = await bridge.open(result, address: address, slot: slot, outbound: outbound, channel: connection.channel)
                    case let .message(bytes):
                        if let id { await bridge.receive(bytes, from: id) }
                    }
                }
            }
        } catch {
            // The channel handler already logged protocol errors; this is the close.
        }
        if let id { await bridge.close(id) } else { bridge.admission.release(slot) }
    }
}

extension BridgeServer.Reloaded {
    /// Which parts differ, for the log.
    static func changes(from old: Self, to new: Self) -> [String] {
        var changed: [String] = []
        if old.settings.limits != new.settings.limits { changed.append("limits") }
        if old.settings.policy != new.settings.policy || old.settings.defaultsAdd != new.settings.defaultsAdd
            || old.settings.defaultsRemove != new.settings.defaultsRemove || old.settings.extraCommands != new.settings.extraCommands {
            changed.append("access rules")
        }
        let oldToken = old.gatewayToken?.withUnsafeBytes { Array($0) }, newToken = new.gatewayToken?.withUnsafeBytes { Array($0) }
        if oldToken != newToken { changed.append("gateway token") }
        return changed
    }
}
