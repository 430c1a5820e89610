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
        let state = try OpenedState.open(configuration, logger: logger)
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
        let metrics = configuration.metrics == nil ? BridgeMetrics.disabled : BridgeMetrics.prometheus(registry)
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
            await links.forgetAllBut(Set(state.initial.paired.nodes.map(\.nodeId)))
            await driver.attach { $0.openClaw = links }
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
        /// The browser door's listeners (issue 64), if it is on.
        let browserDoors: [any Channel]
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
        if let events = console?.events { await driver.attach { $0.liveChanged = { events.changed($0) } } }
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
            servers = try await NodeDoor.bind(configuration, identity: state.identity, admission: relay.admission, invites: relay.invites, driver: driver, logger: logger)
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
        let browserDoors: [any Channel]
        do {
            (canvasRelay, canvasListeners) = try await CanvasRelay.start(configuration, driver: driver, logger: logger)
            do {
                (appDoors, appAdvertisement) = try await OpenClawAppDoor.start(configuration, admission: relay.admission, driver: driver, logger: logger)
                do {
                    browserDoors = try await BrowserDoor.start(
                        .init(
                            configuration: configuration, identity: state.identity, admission: relay.admission, invites: relay.invites, driver: driver,
                            logger: logger, canvasPort: canvasListeners.first?.localAddress?.port))
                } catch {
                    for channel in appDoors { try? await channel.close() }
                    throw error
                }
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
            canvasRelay: canvasRelay, canvasListeners: canvasListeners, appDoors: appDoors, browserDoors: browserDoors, appAdvertisement: appAdvertisement,
            reachWatch: reachWatch)
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
        let publisher = Advertising.start(
            configuration, port: listening.port, fingerprint: fingerprint, extras: listening.appAdvertisement.map { [$0] } ?? [],
            driver: driver, logger: logger)
        // OpenClaw's apps read the certificate's fingerprint from the TXT: a rotation announces the new one.
        if let publisher, let extra = listening.appAdvertisement {
            await driver.attach {
                $0.doorCertificateRotated = { sha256 in
                    publisher.updateExtra(type: extra.type, txt: extra.txt.map { $0.hasPrefix("gatewayTlsSha256=") ? "gatewayTlsSha256=\(sha256)" : $0 })
                }
            }
        }
        let maxMessageSize = configuration.settings.limits.gatewayMessageBytes
        let link = configuration.gateway.flatMap { gateway in
            gateway.wire == .lanbridge
                ? GatewayLink(gateway, driver: driver, maxMessageSize: maxMessageSize, backoff: GatewayLink.backoff(configuration.settings.limits), logger: logger) : nil
        }
        if let link { await driver.attach { $0.gatewayDialler = link } }
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
        let asks = AskNotifier(
            logger: logger, metrics: driver.metrics, console: listening.console.flatMap { parts in listening.consoleURL.map { (parts.auth, $0) } })
        await driver.attach { $0.askNotifier = asks }
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
                        await Reloading.apply(
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
                        await ControlSocket.serveAll(
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
            for channel in listening.canvasListeners + listening.appDoors + listening.browserDoors { channel.close(promise: nil) }
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
}
