import FoundationEssentials
import LanbridgeCrypto
import LanbridgeCore
import LanbridgeDiscovery
import LanbridgeNet
import LanbridgeStores
import LanbridgeTransport
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Prometheus

/// `lanbridge serve`: listens, runs the Noise handshake on each connection, and hands sessions to
/// the core through the driver (`BridgeDriver`). Returns when the task is cancelled (SIGTERM/SIGINT),
/// after closing everything.
public enum BridgeServer {
    /// The one place the version is written; `scripts/package` reads it from here.
    public static let version = "0.10.0"
    /// The listening socket's accept queue (the kernel caps it at `net.core.somaxconn`, 4096 on
    /// current Linux): room for a reconnect storm of thousands of nodes.
    public static let acceptBacklog: Int32 = 4096
    /// A node connection's receive buffer, which NIO keeps between reads: an idle node's messages
    /// (handshake, pings) are tens of bytes, so it starts at 512 bytes (NIO's default, 2 KiB, was
    /// a fifth of an idle node's heap at 10,000 nodes); it grows within two reads for a result.
    static let nodeReceiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    /// What a reload (SIGHUP) reads again: the config file and the gateway token.
    public struct Reloaded: Sendable {
        public var settings: BridgeSettings
        public var gatewayToken: SecureBytes?
        public init(settings: BridgeSettings, gatewayToken: SecureBytes?) { (self.settings, self.gatewayToken) = (settings, gatewayToken) }
    }

    /// `hangups` yields once per SIGHUP; `reload` reads the files again (throwing keeps the
    /// running settings).
    public static func run(
        configuration: BridgeConfiguration, logger: Logger, hangups: AsyncStream<Void>? = nil,
        reload: (@Sendable () throws -> Reloaded)? = nil, onListening: @Sendable (Int) -> Void = { _ in }
    ) async throws {
        guard !configuration.listen.isEmpty else { throw BridgeConfiguration.ListenProblem.empty }
        let state = try openState(configuration, logger: logger)
        defer {
            state.watcher.stop()
            withExtendedLifetime(state.daemonLock) {}  // held until the very end
        }
        // Room for the largest result the bridge relays, so an oversized one is refused with
        // PAYLOAD_TOO_LARGE rather than by dropping the node.
        var configuration = configuration
        configuration.limits.maxMessageSize = max(configuration.limits.maxMessageSize, configuration.settings.limits.sessionMessageBytes)
        let relay = try await makeRelay(configuration, state: state, logger: logger)
        let listening = try await bindAll(configuration, state: state, relay: relay, logger: logger)
        onListening(listening.port)
        let services = try await startServices(configuration, state: state, relay: relay, listening: listening, logger: logger)
        await serve(configuration, state: state, relay: relay, listening: listening, services: services, hangups: hangups, reload: reload, logger: logger)
        await stop(relay: relay, listening: listening, services: services)
        logger.info("lanbridge stopped")
    }

    // MARK: - The phases of a run

    /// The state directory, held: the daemon lock, the identity, the watcher and the first read.
    struct OpenedState {
        let daemonLock: DaemonLock
        let identity: X25519.KeyPair
        let watcher: StoreWatcher
        let initialVersion: String
        let initial: PairingState
        /// The soft RLIMIT_NOFILE in force: every listener's connections share it (`DescriptorGate`).
        let openFileLimit: Int
        /// What the listeners' own bounds add up to, with the reserve (`DescriptorBudget.needed`).
        let listenerBounds: Int
    }

    private static func openState(_ configuration: BridgeConfiguration, logger: Logger) throws -> OpenedState {
        try configuration.stateDirectory.prepare()
        try configuration.stateDirectory.checkNotWritableByOthers()
        // Before anything else is touched: a second daemon must not disturb the first one's files.
        let daemonLock = try DaemonLock(directory: configuration.stateDirectory)
        if let problem = configuration.stateDirectory.privacyProblem() { logger.warning("state directory \(configuration.stateDirectory.url.path): \(problem)") }
        // Files an older version or a private directory left 0600 become the group's too (or back).
        StateSharing.reconcile(configuration.stateDirectory.url, secrets: [IdentityStore.fileName])
        let identity = try IdentityStore(directory: configuration.stateDirectory).loadOrCreate()
        // Watch before the first read, so no change the CLI makes from here on goes unseen.
        let watcher = try StoreWatcher(
            directory: configuration.stateDirectory.url,
            files: [PairingStore.pairedFileName, PairingStore.pendingFileName, PairingStore.invitesFileName])
        let initial: PairingState
        let initialVersion: String
        do {
            // Files an older lanbridge wrote are rewritten in this one's format (audited), once;
            // a newer or corrupt store stops the start here, unchanged.
            let store = PairingStore(directory: configuration.stateDirectory)
            for migrated in try store.migrate(actor: "bridge") { logger.notice("state migrated: \(migrated)") }
            initialVersion = store.pairedFileVersion()
            initial = try store.read()
        } catch {
            watcher.stop()
            throw error
        }
        let descriptors = DescriptorBudget(
            paired: initial.paired.nodes.count, openClaw: configuration.gateway?.wire == .openclaw,
            unauthenticated: configuration.admission.maxUnauthenticated + configuration.admission.maxWaiting,
            http: [configuration.metrics, configuration.console].compactMap { $0 }.count * HTTPConnectionTable.Limits().total,
            canvas: configuration.canvas == nil ? 0 : configuration.settings.limits[.canvasConnections])
        let openFileLimit = OpenFileLimit.raise(toward: descriptors.needed)
        if let shortfall = descriptors.shortfall(limit: openFileLimit) { logger.warning("\(shortfall)") }
        return OpenedState(
            daemonLock: daemonLock, identity: identity, watcher: watcher, initialVersion: initialVersion, initial: initial,
            openFileLimit: openFileLimit, listenerBounds: descriptors.needed)
    }

    /// The relay's parts, before any listener: the core, its driver on one event loop, the
    /// admission policy and the OpenClaw links are consulted from the first accept on.
    struct Relay {
        let loop: any EventLoop
        let io: StateIO
        let registry: PrometheusCollectorRegistry
        let metrics: BridgeMetrics
        let admission: Admission
        let invites: InviteCache
        let driver: BridgeDriver
        let openClawLinks: OpenClawLinks?
    }

    private static func makeRelay(_ configuration: BridgeConfiguration, state: OpenedState, logger: Logger) async throws -> Relay {
        // One event loop carries the whole relay: nodes, the gateway link and the core, so a
        // message crosses the bridge without a thread hop.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let registry = PrometheusCollectorRegistry()
        let metrics =
            configuration.metrics == nil
            ? BridgeMetrics.disabled
            : BridgeMetrics(
                factory: {
                    var factory = PrometheusMetricsFactory(registry: registry)
                    factory.durationHistogramBuckets["lanbridge_invoke_duration_seconds"] = [
                        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
                        .seconds(10), .seconds(30), .seconds(60),
                    ]
                    return factory
                }())
        // The daemon's own store changes (a pairing request, a redeemed invite) are audited inside
        // the store's write: counted there, as the core's own entries are when it records them.
        let io = StateIO(directory: configuration.stateDirectory, logger: logger, appended: { metrics.auditAppended($0) })
        let admission = Admission(limits: configuration.admission, metrics: metrics, logger: logger)
        let invites = InviteCache(store: PairingStore(directory: configuration.stateDirectory))
        invites.replace(with: state.initial)
        // What is known before the listener, in the first runtime.json already.
        var runtime = RuntimeStatus(bridgeName: configuration.name, listening: [], startedAt: Date())
        if !configuration.mdns { runtime.mdns = "off" }
        if configuration.gateway == nil { runtime.gateway = "off" }
        let core = BridgeCore(
            name: configuration.name, settings: configuration.settings, pairingTiming: configuration.pairingTiming, runtime: runtime,
            initial: state.initial, pairedVersion: state.initialVersion,
            gateway: configuration.gateway.map { $0.wire == .openclaw ? .openClaw : .lanbridge }, logger: logger)
        io.forgetUnpairedPushTokens(Set(state.initial.paired.nodes.map(\.nodeId)))
        // One certificate for both TLS doors (the canvas relay, OpenClaw's apps), made once and kept.
        var doorTLS: DoorTLS?
        if configuration.canvas != nil || configuration.openClawApps?.tls == true {
            do { doorTLS = try DoorTLS(directory: configuration.stateDirectory) } catch {
                // Only a relay on its default address may start without it (it then says why it is off).
                guard configuration.openClawApps?.tls != true, configuration.canvas?.optional == true else { throw error }
            }
        }
        let descriptors = DescriptorGate(capacity: DescriptorGate.capacity(limit: state.openFileLimit), metrics: metrics, logger: logger)
        logger.info(
            "descriptor budget for every listener",
            metadata: [
                "descriptors": "\(descriptors.capacity)", "openFileLimit": "\(state.openFileLimit)",
                "reserve": "\(DescriptorGate.reserve)", "listenerBounds": "\(state.listenerBounds)",
            ])
        let driver = BridgeDriver(
            loop: loop, core: core, io: io, admission: admission, invites: invites, metrics: metrics, doorTLS: doorTLS,
            descriptors: descriptors, logger: logger)
        // Before the listener: the first node to connect gets its socket at the gateway.
        var openClawLinks: OpenClawLinks?
        if let gateway = configuration.gateway, gateway.wire == .openclaw {
            let links = OpenClawLinks(
                .init(
                    dialer: GatewayDialer(gateway), token: gateway.token, version: BridgeServer.version,
                    maxMessageSize: configuration.settings.limits.gatewayMessageBytes,
                    timing: OpenClawRedial.Timing(configuration.settings.limits)),
                devices: OpenClawDevices(directory: configuration.stateDirectory), driver: driver, logger: logger)
            links.forgetAllBut(Set(state.initial.paired.nodes.map(\.nodeId)))
            try await loop.submit { driver.openClaw = links }.get()
            openClawLinks = links
        }
        return Relay(loop: loop, io: io, registry: registry, metrics: metrics, admission: admission, invites: invites, driver: driver, openClawLinks: openClawLinks)
    }

    /// Everything bound: the HTTP listeners (monitoring, console), the node listeners, the canvas
    /// relay and the door for OpenClaw's apps.
    struct Listening {
        let monitoring: [any Channel]
        let console: ConsoleParts?
        let consoleURL: String?
        let servers: [any Channel]
        let port: Int
        /// "host:port, …", for logs and systemd's status.
        let addresses: String
        let canvasRelay: CanvasRelay?
        let canvasListeners: [any Channel]
        let appDoors: [any Channel]
        let appAdvertisement: AvahiPublisher.Extra?
        /// Keeps the reachable list in step with the host's addresses.
        let reachWatch: RepeatedTask
    }

    /// Binds in an order that lets a bad address stop the start before nodes are accepted; if one
    /// the admin asked for cannot be bound, what is already bound closes before the start fails.
    private static func bindAll(_ configuration: BridgeConfiguration, state: OpenedState, relay: Relay, logger: Logger) async throws -> Listening {
        let (loop, io, driver) = (relay.loop, relay.io, relay.driver)
        let console = try configuration.console.map { _ in
            try ConsoleParts(
                auth: ConsoleAuth(), events: ConsoleEvents(directory: configuration.stateDirectory.url),
                settings: NIOLockedValueBox(configuration.settings))
        }
        if let events = console?.events { driver.liveChanged = { events.changed($0) } }
        let listeners: [HTTPListener]
        do {
            listeners = try await HTTPListener.bind(configuration: configuration, registry: relay.registry, driver: driver, console: console, logger: logger)
        } catch {
            console?.events.stop()
            await io.finish(on: loop)
            throw error
        }
        let monitoring = listeners.map(\.channel)
        let consoleURL = listeners.first { $0.console }.map { "http://\(ListenAddress.format(host: $0.host, port: $0.port))" }
        let servers: [any Channel]
        do {
            servers = try await bindListeners(configuration, identity: state.identity, admission: relay.admission, invites: relay.invites, driver: driver, logger: logger)
        } catch {
            for channel in monitoring { try? await channel.close() }
            console?.events.stop()
            await io.finish(on: loop)
            throw error
        }
        let port = servers.first?.localAddress?.port ?? configuration.port
        // An IPv6 address in brackets, so "host:port" splits at the right colon.
        let listeningList = configuration.listen.map { ReachableAddress(host: $0.host, port: port).description }
        let addresses = listeningList.joined(separator: ", ")
        let computeReach: @Sendable () -> [ReachableAddress] = {
            BridgeReach.addresses(
                listen: configuration.listen, port: port, configured: configuration.addresses, interfaces: NetworkInterfaces.addresses())
        }
        let reach = computeReach()
        await driver.setListening(listeningList, reachable: reach.map(\.description))
        logger.info(
            "lanbridge listening",
            metadata: [
                "address": "\(listeningList[0])", "addresses": "\(addresses)", "reachable": "\(reach.map(\.description).joined(separator: ", "))",
                "name": "\(configuration.name)",
                "fingerprint": "\(Fingerprint(publicKey: state.identity.publicKey))", "state": "\(configuration.stateDirectory.url.path)",
            ])
        let canvasRelay: CanvasRelay?, canvasListeners: [any Channel], appDoors: [any Channel], appAdvertisement: AvahiPublisher.Extra?
        do {
            (canvasRelay, canvasListeners) = try await startCanvasRelay(configuration, driver: driver, logger: logger)
            do {
                (appDoors, appAdvertisement) = try await startOpenClawAppDoor(configuration, admission: relay.admission, driver: driver, logger: logger)
            } catch {
                for channel in canvasListeners { try? await channel.close() }
                await canvasRelay?.stop()
                throw error
            }
        } catch {
            for channel in monitoring + servers { try? await channel.close() }
            console?.events.stop()
            await io.finish(on: loop)
            throw error
        }
        let reachWatch = ReachWatch.start(
            on: driver.loop, listening: listeningList, reachable: reach.map(\.description), compute: { computeReach().map(\.description) },
            driver: driver, logger: logger)
        return Listening(
            monitoring: monitoring, console: console, consoleURL: consoleURL, servers: servers, port: port, addresses: addresses,
            canvasRelay: canvasRelay, canvasListeners: canvasListeners, appDoors: appDoors, appAdvertisement: appAdvertisement, reachWatch: reachWatch)
    }

    /// What runs beside the listeners: the mDNS advertisement, the gateway link, the control
    /// socket, the timers and systemd's notifications.
    struct Services {
        let publisher: AvahiPublisher?
        let link: GatewayLink?
        let hello: JSONValue
        let control: NIOAsyncChannel<ControlSocket.Connection, Never>?
        let controlPath: String
        let sharing: StateSharing
        let notifier: ServiceNotifier?
        let watchdog: RepeatedTask?
    }

    private static func startServices(
        _ configuration: BridgeConfiguration, state: OpenedState, relay: Relay, listening: Listening,
        logger: Logger
    ) async throws -> Services {
        let driver = relay.driver
        let fingerprint = Fingerprint(publicKey: state.identity.publicKey)
        let publisher = advertise(
            configuration, port: listening.port, fingerprint: fingerprint, extras: listening.appAdvertisement.map { [$0] } ?? [],
            driver: driver, logger: logger)
        // OpenClaw's apps read the certificate's fingerprint from the TXT: a rotation announces the new one.
        if let publisher, let extra = listening.appAdvertisement {
            driver.doorCertificateRotated = { sha256 in
                publisher.updateExtra(type: extra.type, txt: extra.txt.map { $0.hasPrefix("gatewayTlsSha256=") ? "gatewayTlsSha256=\(sha256)" : $0 })
            }
        }
        let maxMessageSize = configuration.settings.limits.gatewayMessageBytes
        let link = configuration.gateway.flatMap { gateway in
            gateway.wire == .lanbridge
                ? GatewayLink(gateway, driver: driver, maxMessageSize: maxMessageSize, backoff: GatewayLink.backoff(configuration.settings.limits), logger: logger) : nil
        }
        if let link { try await driver.loop.submit { driver.gatewayDialler = link }.get() }
        if let gateway = configuration.gateway, gateway.wire == .openclaw {
            driver.submit(.gatewayStatus("openclaw: a socket per connected node at \(gateway.endpoint)"), order: .now)
        } else if link == nil {
            driver.submit(.gatewayStatus("off"), order: .now)
        }
        let hello: JSONValue = [
            "bridgeName": .string(configuration.name), "fingerprint": .string(fingerprint.description),
            "protocol": 1, "version": .string(BridgeServer.version),
        ]
        let controlPath = configuration.stateDirectory.file(ControlSocket.fileName).path
        let sharing = StateSharing.of(configuration.stateDirectory.url)
        let control = configuration.controlSocket ? try await ControlSocket.bind(path: controlPath, driver: driver, logger: logger) : nil
        if control != nil { driver.submit(.controlSocket(controlPath), order: .now) }
        if let consoleURL = listening.consoleURL { driver.submit(.console(consoleURL), order: .now) }
        driver.askNotifier = AskNotifier(
            logger: logger, metrics: driver.metrics, console: listening.console.flatMap { parts in listening.consoleURL.map { (parts.auth, $0) } })
        driver.startTimers(pingInterval: configuration.pingInterval)
        // systemd (Type=notify): ready now; watchdog pings come from the relay's own loop, so a
        // wedged loop stops them and systemd restarts the daemon.
        let notifier = ServiceNotifier()
        let watchdog = notifier?.watchdogInterval.map { interval in
            relay.loop.scheduleRepeatedTask(initialDelay: .zero, delay: interval) { _ in notifier?.watchdog() }
        }
        notifier?.ready(status: "listening on \(listening.addresses)")
        return Services(
            publisher: publisher, link: link, hello: hello, control: control, controlPath: controlPath, sharing: sharing,
            notifier: notifier, watchdog: watchdog)
    }

    /// Until cancelled (SIGTERM, SIGINT): the store watcher, reloads, the gateway link, the
    /// console's events and the control socket, each a task; cancellation closes the listeners.
    private static func serve(
        _ configuration: BridgeConfiguration, state: OpenedState, relay: Relay, listening: Listening, services: Services,
        hangups: AsyncStream<Void>?, reload: (@Sendable () throws -> Reloaded)?, logger: Logger
    ) async {
        let (driver, watcher, console) = (relay.driver, state.watcher, listening.console)
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await _ in watcher.changes() { driver.storeMayHaveChanged() }
                }
                if let hangups, let reload {
                    group.addTask {
                        await applyReloads(
                            hangups, reload: reload, from: configuration, driver: driver, console: console, link: services.link,
                            notifier: services.notifier, listening: listening.addresses, logger: logger)
                    }
                }
                if let link = services.link {
                    group.addTask { await link.run(hello: services.hello) }
                }
                if let console {
                    group.addTask { await console.events.run() }
                }
                if let control = services.control {
                    group.addTask {
                        await serveControl(
                            control, driver: driver, sharing: services.sharing,
                            console: console.flatMap { parts in listening.consoleURL.map { (parts.auth, $0) } }, logger: logger)
                    }
                }
                for server in listening.servers { try? await server.closeFuture.get() }
                group.cancelAll()
            }
        } onCancel: {
            services.notifier?.stopping()
            for server in listening.servers { server.close(promise: nil) }
            services.control?.channel.close(promise: nil)
            for channel in listening.monitoring { channel.close(promise: nil) }
            for channel in listening.canvasListeners + listening.appDoors { channel.close(promise: nil) }
            console?.events.stop()
        }
    }

    /// After the listeners closed: withdraw the advertisement first (peers see the bridge go at
    /// once), then the OpenClaw sockets, the control socket, the canvas relay and the driver
    /// (which closes every connection and removes runtime.json).
    private static func stop(relay: Relay, listening: Listening, services: Services) async {
        services.watchdog?.cancel()
        listening.reachWatch.cancel()
        services.publisher?.stop()
        if let links = relay.openClawLinks { try? await relay.loop.submit { links.stopAll() }.get() }
        if services.control != nil { unlink(services.controlPath) }
        await listening.canvasRelay?.stop()
        await relay.driver.shutdown()
    }

    /// The operator's control socket: each connection served on its own, until the socket closes.
    private static func serveControl(
        _ control: NIOAsyncChannel<ControlSocket.Connection, Never>, driver: BridgeDriver, sharing: StateSharing,
        console: (auth: ConsoleAuth, url: String)?, logger: Logger
    ) async {
        try? await control.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { connections in
                for try await connection in inbound {
                    connections.addTask { await ControlSocket.serve(connection, driver: driver, sharing: sharing, console: console, logger: logger) }
                }
            }
        }
    }

    /// SIGHUP: read the files again and apply what may change while running (access rules, limits
    /// but the transports' sizes, the gateway token); say what changed and what waits for a restart.
    private static func applyReloads(
        _ hangups: AsyncStream<Void>, reload: @Sendable () throws -> Reloaded, from configuration: BridgeConfiguration,
        driver: BridgeDriver, console: ConsoleParts?, link: GatewayLink?, notifier: ServiceNotifier?,
        listening: String, logger: Logger
    ) async {
        var current = Reloaded(settings: configuration.settings, gatewayToken: configuration.gateway?.token)
        for await _ in hangups {
            notifier?.reloading()
            defer { notifier?.ready(status: "listening on \(listening)") }
            do {
                var next = try reload()
                let kept: [String]
                (next.settings.limits, kept) = current.settings.limits.reloaded(to: next.settings.limits)
                if !kept.isEmpty {
                    logger.warning(
                        "\(kept.joined(separator: ", ")) applies after a restart: the message sizes the transports allow were fixed when they started; kept the running value")
                }
                let changes = Reloaded.changes(from: current, to: next)
                await driver.reload(next.settings)
                console?.settings.withLockedValue { $0 = next.settings }
                if let token = next.gatewayToken, changes.contains("gateway token") { link?.replaceToken(token) }
                logger.notice(changes.isEmpty ? "reloaded: nothing changed" : "reloaded: \(changes.joined(separator: ", ")) changed")
                if next.settings.gateway != current.settings.gateway || next.settings.admission != current.settings.admission {
                    logger.warning("the gateway's URL and options and the admission limits apply after a restart")
                }
                let (was, now) = (current.settings, next.settings)
                if (now.canvas.enabled, now.canvas.listen, now.canvas.upstream) != (was.canvas.enabled, was.canvas.listen, was.canvas.upstream)
                    || now.openClawApps != was.openClawApps
                {
                    logger.warning("the canvas relay's address and upstream, and the door for OpenClaw's apps, apply after a restart (what a canvas may load applies now)")
                }
                current = next
            } catch {
                logger.error("reload failed, keeping the running settings: \(error)")
            }
        }
    }

    /// The canvas relay, if configured: its certificate (made once), its listeners, and the core
    /// told where it is. Its failure to start stops the daemon only if the admin chose its address.
    private static func startCanvasRelay(_ configuration: BridgeConfiguration, driver: BridgeDriver, logger: Logger) async throws
        -> (CanvasRelay?, [any Channel])
    {
        guard let canvas = configuration.canvas else { return (nil, []) }
        var relay: CanvasRelay?
        var bound: [any Channel] = []
        do {
            guard let tls = driver.doorTLS else {
                throw CanvasCertificate.Problem(description: "\(CanvasCertificate.fileName) is unreadable; `lanbridge canvas rotate-cert` makes a new one")
            }
            let made = CanvasRelay(
                .init(
                    tls: tls, upstream: canvas.upstream, limits: configuration.settings.limits,
                    upstreamNeedsCapability: canvas.openClaw), driver: driver, logger: logger)
            relay = made
            var port = canvas.listen.port
            for host in canvas.listen.host.map({ [$0] }) ?? configuration.listen.map(\.host) {
                let channel = try await BindProblem.explaining(host: host, port: port) { try await made.bind(host: host, port: port) }
                bound.append(channel)
                if port == 0 { port = channel.localAddress?.port ?? 0 }
            }
            let listening = bound.compactMap { $0.localAddress }.map { ReachableAddress(host: $0.ipAddress ?? "?", port: $0.port ?? port).description }
            let origins = CanvasRelayInfo.origins(of: canvas.upstream)
            let sha256 = tls.served.sha256
            await driver.setCanvas(
                made, CanvasRelayInfo(port: port, tlsSha256: sha256, upstreamOrigins: origins),
                status: RuntimeStatus.Canvas(listening: listening, tlsSha256: sha256, upstream: canvas.upstream.description))
            logger.info(
                "canvas relay listening",
                metadata: [
                    "canvas": "\(listening.joined(separator: ", "))", "upstream": "\(canvas.upstream)",
                    "sha256": "\(sha256)",
                ])
        } catch {
            for channel in bound { channel.close(promise: nil) }
            await relay?.stop()
            if canvas.optional {
                logger.warning("canvas relay off: \(error) (choose another port with --canvas-listen or canvas.listen, or --no-canvas)")
                return (nil, [])
            }
            throw error
        }
        return (relay, bound)
    }

    /// The front door for OpenClaw's apps (issue 38), if asked for: wss with the bridge's kept
    /// certificate (the canvas relay's), on each listen address or the one named. Plain ws only
    /// where the operator opted in, and never on an address that is not private.
    private static func startOpenClawAppDoor(_ configuration: BridgeConfiguration, admission: Admission, driver: BridgeDriver, logger: Logger) async throws
        -> ([any Channel], AvahiPublisher.Extra?)
    {
        guard let apps = configuration.openClawApps else { return ([], nil) }
        let tls = apps.tls ? driver.doorTLS : nil
        let sha256 = tls?.served.sha256
        let options = OpenClawAppDoor.Options(
            tls: tls, idleTimeout: .seconds(75), maxFrameBytes: configuration.settings.limits.sessionMessageBytes,
            descriptorsEach: configuration.gateway?.wire == .openclaw ? 2 : 1)
        var bound: [any Channel] = []
        var port = apps.listen.port
        do {
            let hosts = apps.listen.host.map { [$0] } ?? configuration.listen.map(\.host)
            for (index, host) in hosts.enumerated() {
                if !apps.tls, (try? CanvasURL("http://\(host.contains(":") ? "[\(host)]" : host)/")).flatMap({ $0.host }).map(CanvasURLPolicy.localReason) == .some(nil) {
                    logger.error("OpenClaw apps: not listening with plain ws:// on \(host), which is not a private address")
                    continue
                }
                let listener = min(index, configuration.listen.count - 1)
                let channel = try await BindProblem.explaining(host: host, port: port) {
                    try await OpenClawAppDoor.bind(host: host, port: port, listener: listener, options: options, admission: admission, driver: driver, logger: logger)
                }
                bound.append(channel)
                if port == 0 { port = channel.localAddress?.port ?? 0 }
            }
        } catch {
            for channel in bound { try? await channel.close() }
            throw error
        }
        let listening = bound.compactMap(\.localAddress).map { ReachableAddress(host: $0.ipAddress ?? "?", port: $0.port ?? port).description }
        let urls = listening.map { "\(apps.tls ? "wss" : "ws")://\($0)" }
        driver.submit(.openClawApps(urls, tlsSha256: sha256), order: .now)
        logger.info(
            "OpenClaw apps door listening",
            metadata: [
                "openclawApps": "\(urls.joined(separator: ", "))",
                "sha256": "\(sha256 ?? "none (plain ws)")",
            ])
        // What OpenClaw's apps browse for (src/infra/bonjour.ts:152-210): iOS needs gatewayTls=1.
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "lanbridge"
        var txt = ["role=gateway", "transport=gateway", "gatewayPort=\(port)", "lanHost=\(host).local", "displayName=\(configuration.name)"]
        if let sha256 { txt += ["gatewayTls=1", "gatewayTlsSha256=\(sha256)"] }
        return (bound, AvahiPublisher.Extra(type: "_openclaw-gw._tcp", port: port, txt: txt))
    }

    /// One listener per `listen` entry, all on one port: the first picks it when `port` is 0.
    /// If any cannot bind, those already bound are closed and the start fails.
    private static func bindListeners(
        _ configuration: BridgeConfiguration, identity: X25519.KeyPair, admission: Admission,
        invites: InviteCache, driver: BridgeDriver, logger: Logger
    ) async throws -> [any Channel] {
        var servers: [any Channel] = []
        var port = configuration.port
        do {
            for (listener, bind) in configuration.listen.enumerated() {
                let server = try await BindProblem.explaining(host: bind.host, port: port) {
                    try await ServerBootstrap(group: driver.loop)
                        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                        // After a restart every node reconnects at once: a short accept queue (NIO's
                        // default is 256) drops SYNs, and each dropped node waits out TCP's 1-3-7 s retries.
                        .serverChannelOption(.backlog, value: Self.acceptBacklog)
                        .childChannelOption(.socketOption(.so_keepalive), value: 1)
                        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                        .childChannelOption(.recvAllocator, value: Self.nodeReceiveBuffers)
                        // What a node has not read stays in its outbox above this (NodeOutbox).
                        .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 << 10, high: 256 << 10))
                        .childChannelInitializer { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try admit(
                                    channel, listener: listener, configuration: configuration, identity: identity, admission: admission,
                                    invites: invites, driver: driver, logger: logger)
                            }
                        }
                        .bind(host: bind.host, port: port).get()
                }
                servers.append(server)
                port = server.localAddress?.port ?? port
            }
        } catch {
            for server in servers { try? await server.close() }
            throw error
        }
        return servers
    }

    /// A new node connection: admitted (or refused) by the admission policy, then given its
    /// handshake and its place in the driver.
    private static func admit(
        _ channel: any Channel, listener: Int, configuration: BridgeConfiguration, identity: X25519.KeyPair,
        admission: Admission, invites: InviteCache, driver: BridgeDriver, logger: Logger
    ) throws {
        let address = channel.remoteAddress?.ipAddress ?? "?"
        let decision = admission.connection(from: address, listener: listener, close: { channel.close(promise: nil) })
        guard case let .admit(slot, _, handshakeTimeout) = decision else {
            channel.close(promise: nil)
            return
        }
        // With OpenClaw's gateway a paired node holds a second descriptor, its socket there.
        let cost = configuration.gateway?.wire == .openclaw ? 2 : 1
        let ticket = driver.descriptors?.admit(channel, peer: DescriptorGate.peer(of: channel.remoteAddress), cost: cost)
        if driver.descriptors != nil, ticket == nil {
            admission.release(slot)
            channel.close(promise: nil)
            return
        }
        let session = SecureSession(responderWith: identity, limits: configuration.limits, inviteLookup: { id in invites.psk(for: id) })
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(IdleStateHandler(readTimeout: .milliseconds(Int64(configuration.idleTimeout * 1000))))
        try sync.addHandler(IdleCloser(logger: logger))
        let timeout = min(handshakeTimeout, configuration.handshakeTimeout)
        try sync.addHandler(SecureChannelHandler(responder: session, handshakeTimeout: .milliseconds(Int64(timeout * 1000)), logger: logger))
        let id = driver.accepted(channel, slot: slot, ticket: ticket)
        try sync.addHandler(
            NodeOutbox(limit: configuration.settings.limits[.nodeQueueBytes]) { backlogged in driver.submit(.nodeBacklog(id, backlogged), order: .inOrder) })
        try sync.addHandler(NodeSessionHandler(driver: driver, id: id, address: address))
    }

    /// Starts advertising, unless turned off. A missing avahi-daemon is a warning, never a reason not to serve.
    private static func advertise(
        _ configuration: BridgeConfiguration, port: Int, fingerprint: Fingerprint, extras: [AvahiPublisher.Extra] = [],
        driver: BridgeDriver, logger: Logger
    ) -> AvahiPublisher? {
        guard configuration.mdns else {
            driver.submit(.advertising("off", name: nil), order: .now)
            return nil
        }
        // On the first listener's interface: the LAN comes first (tailnets carry no multicast).
        var interface: Int32?
        if case let .address(address) = configuration.listen[0] {
            interface = NetworkInterfaces.index(of: address)
            if interface == nil { logger.warning("no interface carries \(address); advertising on all of them") }
        } else if configuration.listen[0] == .loopback {
            interface = NetworkInterfaces.index(of: "127.0.0.1")
        }
        do {
            let publisher = try AvahiPublisher(
                name: configuration.name, port: port,
                advertisement: BridgeAdvertisement(shortFingerprint: fingerprint.short, name: configuration.name),
                interfaceIndex: interface, logger: logger)
            publisher.extras = extras
            publisher.onStatus = { status in
                switch status {
                case .waitingForDaemon: driver.submit(.advertising("waiting for avahi-daemon", name: nil), order: .now)
                case let .registering(name): driver.submit(.advertising("registering", name: name), order: .now)
                case let .published(name): driver.submit(.advertising("published", name: name), order: .now)
                case let .failed(why): driver.submit(.advertising("failed: \(why)", name: nil), order: .now)
                }
            }
            try publisher.start()
            return publisher
        } catch {
            logger.warning("mDNS advertising unavailable (\(error)); nodes can still connect by address")
            driver.submit(.advertising("failed: \(error)", name: nil), order: .now)
            return nil
        }
    }
}

extension BridgeServer.Reloaded {
    /// Which parts differ, for the log.
    static func changes(from old: Self, to new: Self) -> [String] {
        var changed: [String] = []
        if old.settings.limits != new.settings.limits { changed.append("limits") }
        if old.settings.policy != new.settings.policy || old.settings.defaultsAdd != new.settings.defaultsAdd
            || old.settings.defaultsRemove != new.settings.defaultsRemove || old.settings.extraCommands != new.settings.extraCommands
        {
            changed.append("access rules")
        }
        let oldToken = old.gatewayToken?.withUnsafeBytes { Array($0) }, newToken = new.gatewayToken?.withUnsafeBytes { Array($0) }
        if oldToken != newToken { changed.append("gateway token") }
        return changed
    }
}
