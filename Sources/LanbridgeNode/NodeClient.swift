#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import Logging
import NIOCore
import NIOPosix

/// What a node app links to talk to a lanbridge: pairing (by code or invite), a pinned bridge key,
/// a connection kept up with backoff, foreground state, command handlers and events.
///
///     let client = try NodeClient(configuration: .init(stateDirectory: dir, details: details))
///     await client.handle("device.echo") { params in params ?? .null }
///     let events = client.events                      // subscribe before run, miss nothing
///     Task { for await event in events { print(event) } }
///     try await client.run(host: "192.168.1.10", port: 18790)
public actor NodeClient {
    /// A command handler on JSON: params in (nil when the invoke had none), payload out. Throw a
    /// `LanbridgeError` to answer with its code; anything else answers `COMMAND_FAILED`.
    public typealias Handler = @Sendable (JSONValue?) async throws -> JSONValue

    /// A new subscription to the client's events: every subscriber sees every event from the
    /// moment it subscribes, each with its own buffer of the newest 256 (a slow consumer loses its
    /// own oldest events, and never holds up the client or other subscribers).
    public nonisolated var events: AsyncStream<Event> { emit.subscribe() }
    nonisolated let emit = EventBroadcast<Event>(bufferSize: 256)
    /// This node's ID, as the operator sees it.
    public nonisolated let nodeID: String
    let configuration: Configuration
    let identity: X25519.KeyPair
    let store: any NodeKeyStore
    var pin: BridgePin?
    var handlers: [String: Handler] = [:]
    var foreground: Bool
    let transport: any NodeTransport
    var connection: NodeConnection?
    /// The protocol of the current connection (`NodeSession`): this actor only carries out what it
    /// decides.
    var session: NodeSession?
    /// Counts connections, so a handler that finishes after its connection ended cannot answer on
    /// the next one (whose session may use the same run keys).
    var sessionGeneration = 0
    /// Handlers running for invokes of the current connection, by the session's run key: cancelled
    /// when it says so (invoke.cancel, or the connection's end).
    var running: [Int: Task<Void, Never>] = [:]
    var calls: [String: CheckedContinuation<Result<JSONValue?, ErrorMessage>, Never>] = [:]
    /// The timer for the session's earliest request deadline.
    var deadlineTimer: (deadline: Moment, task: Scheduled<Void>)?
    var nextCall = 0
    /// The agent's canvas, as the bridge last said (nil: this bridge has no canvas host).
    public internal(set) var canvas: CanvasAccess?
    /// What `discovery` currently sees of the pinned bridge, by service name.
    var discovered: [String: [ReachableAddress]] = [:]
    let logger: Logger
    /// The event loop the client runs on, and its connections' channels too: a message from the
    /// bridge reaches the client, and the answer the socket, without a hop between threads (a hop
    /// costs more than the invoke). Handlers start on it too, unless configured not to.
    nonisolated let eventLoop: any EventLoop
    /// The client's executor: its connection's event loop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }
    /// The event loop as a task executor (an `EventLoopTaskExecutor`; nil on older systems): the
    /// connection's reader runs on it, and handlers too when `handlersOnEventLoop`.
    nonisolated let eventLoopExecutor: (any Sendable)?

    /// Loads (or creates) the node's key pair and pin from the key store; throws if they cannot be read.
    public init(configuration: Configuration, logger: Logger = Logger(label: "lanbridge.node")) throws {
        self.configuration = configuration
        store = configuration.keyStore ?? FileKeyStore(directory: configuration.stateDirectory)
        transport = configuration.transport ?? TCPNodeTransport(logger: logger)
        identity = try store.identity()
        pin = try store.pin()
        nodeID = Fingerprint(publicKey: identity.publicKey).description
        foreground = configuration.foreground
        self.logger = logger
        eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            eventLoopExecutor = EventLoopTaskExecutor(eventLoop)
        } else {
            eventLoopExecutor = nil
        }
    }

    /// The bridge this node is paired with (its key, fingerprint, address and name), if any.
    public var bridge: BridgePin? { pin }

    /// Unpairs locally: forgets the pinned bridge (the node's key, and so its ID, stays). The next
    /// `run` pairs again; a connection open now is not closed by this.
    public func forgetBridge() throws {
        try store.forgetPin()
        pin = nil
    }

    /// Registers the handler for `command` (replacing an earlier one). An invoke of a command with
    /// no handler is answered `UNKNOWN_COMMAND`. Handlers run concurrently, each in its own task
    /// (on the client's event loop unless `Configuration.handlersOnEventLoop` is false); when the
    /// connection an invoke came on ends, its handler's task is cancelled (its answer could go
    /// nowhere else).
    public func handle(_ command: String, _ handler: @escaping Handler) {
        handlers[command] = handler
    }

    /// Tells the bridge the app moved to the foreground or background (it fails foreground-only
    /// commands fast while backgrounded).
    public func setForeground(_ foreground: Bool) async {
        self.foreground = foreground
        try? await perform(handle(.foreground(foreground)))
    }

    /// Sends an event to the gateway through the bridge (dropped if not connected; the bridge
    /// limits events per minute, PROTOCOL.md §9.4).
    public func send(event: String, payload: JSONValue? = nil) async {
        try? await perform(handle(.appEvent(NodeEvent(event: event, payload: payload))))
    }

    /// Calls the gateway through the bridge and returns its payload. Only `agent` (give an
    /// `idempotencyKey`, so a retry is not run twice) and `system-event` are allowed; the bridge
    /// refuses anything else with `FORBIDDEN`. Throws the bridge's or gateway's code, `UNAVAILABLE`
    /// when not connected (or the connection closes), `TIMEOUT` when no answer comes in `timeout`.
    public func call(
        _ method: String, params: JSONValue? = nil, idempotencyKey: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws(LanbridgeError) -> JSONValue? {
        try await request(timeout: timeout) { GatewayCall(id: "c\($0)", method: method, params: params, idempotencyKey: idempotencyKey) }
    }

    /// Tells the bridge where to wake this node (PROTOCOL.md §9.6): the push provider's token, and
    /// for APNs the environment and the app's bundle ID as `topic`. The latest registration
    /// replaces the one before: register again whenever the provider issues a new token. The
    /// bridge keeps the token from logs and from the CLI's output; with an OpenClaw gateway an APNs
    /// token also reaches the gateway, for its own wake. Throws `INVALID_REQUEST` (checked here
    /// first), `RATE_LIMITED` (it counts as one of the node's events), `UNAVAILABLE`, `TIMEOUT`.
    public func registerPush(
        provider: String, token: String, environment: String? = nil, topic: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws(LanbridgeError) {
        let check = PushRegister(id: "", provider: provider, token: token, environment: environment, topic: topic)
        do throws(ErrorMessage) { _ = try check.validated() } catch { throw LanbridgeError(error) }
        _ = try await request(timeout: timeout) { PushRegister(id: "p\($0)", provider: provider, token: token, environment: environment, topic: topic) }
    }

    /// Asks the bridge to extend this session's canvas capability (it lapses after ten minutes
    /// unused; each page load extends it too) and returns the canvas as it now stands. Throws
    /// `UNAVAILABLE` when the bridge has no canvas host or the node is not connected.
    @discardableResult
    public func refreshCanvas(timeout: Duration = .seconds(30)) async throws(LanbridgeError) -> CanvasAccess {
        _ = try await request(timeout: timeout) { CanvasRefresh(id: "v\($0)") }
        guard let canvas else { throw LanbridgeError(code: LanbridgeError.unavailable, message: "no canvas", retryable: true) }
        return canvas
    }

    func canvasGiven(_ access: CanvasAccess?) {
        canvas = access
        if let access { emit.yield(.canvas(access)) }
    }

    /// Sends a message that the bridge answers by its `id` (`gateway.result`, `push.result`), and
    /// waits for that answer, the deadline, or the connection's end.
    func request<M: SessionMessage & Identified>(timeout: Duration, _ make: (Int) -> M) async throws(LanbridgeError) -> JSONValue? {
        guard session?.isConnected == true else {
            throw LanbridgeError(code: LanbridgeError.unavailable, message: "not connected to the bridge", retryable: true)
        }
        nextCall += 1
        let outgoing = make(nextCall)
        let id = outgoing.id
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let result = await withCheckedContinuation { continuation in
            calls[id] = continuation
            // Sent by the session of the connection open now, which answers it if that one ends
            // first; a later connection never sends it.
            Task { await self.handleQuietly(.request(id: id, message: outgoing, deadline: .now + seconds, timeoutText: "\(timeout)")) }
        }
        switch result {
        case let .success(payload): return payload
        case let .failure(error): throw LanbridgeError(error)
        }
    }

    /// Completes a call once: by its result, its deadline, or the connection closing.
    func answer(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) {
        calls.removeValue(forKey: id)?.resume(returning: result)
    }

    /// Connects, pairs if needed, and stays connected, reconnecting with capped exponential backoff,
    /// until the task is cancelled or a `ClientError` says retrying is pointless. `host:port` is
    /// tried after mDNS and the address that worked last, and before the bridge's own list
    /// (`BridgeDialer`); with nothing learned yet it is the only address.
    public func run(host: String, port: Int, invite: InviteURI? = nil) async throws {
        try await run(configured: [ReachableAddress(host: host, port: port)], invite: invite)
    }

    /// Pairs with an invite, trying its addresses in order, then stays connected as `run()` does.
    public func run(invite: InviteURI) async throws {
        try await run(configured: invite.addresses, invite: invite)
    }

    /// Connects to the pinned bridge wherever it can be found: mDNS (with `discovery`), the address
    /// that worked last, and the addresses the bridge listed. Throws `notPaired` before pairing.
    public func run() async throws {
        guard pin != nil else { throw ClientError.notPaired }
        try await run(configured: [], invite: nil)
    }

    func run(configured: [ReachableAddress], invite: InviteURI?) async throws {
        var backoff = Backoff(initial: configuration.minimumBackoff, maximum: configuration.maximumBackoff, resetAfter: 30)
        var invite = pin == nil ? invite : nil
        let browsing = configuration.discovery.map { discovery in Task { await self.browse(discovery) } }
        defer { browsing?.cancel() }
        while !Task.isCancelled {
            let started = Date()
            let reason: String
            do {
                reason = try await connectOnce(configured: configured, invite: invite)
            } catch let error as ClientError {
                emit.yield(.disconnected(reason: error.description))
                throw error
            } catch {
                reason = "\(error)"
            }
            if pin != nil { invite = nil }  // an invite pairs once; afterwards the pin is the credential
            emit.yield(.disconnected(reason: reason))
            let delay = backoff.wait(lasted: Date().timeIntervalSince(started))
            logger.info("reconnecting in \(NumberText.fixed(delay)) s: \(reason)")
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            backoff.grow()
        }
    }

    /// Keeps `discovered` to what the browser sees of the pinned bridge (its short fingerprint in
    /// the TXT record: a hint that orders attempts, never trust).
    func browse(_ discovery: any BridgeDiscovery) async {
        for await event in discovery.events() {
            switch event {
            case let .found(bridge):
                guard let pin, bridge.shortFingerprint == pin.fingerprint.short else { continue }
                discovered[bridge.name] = bridge.addresses.prefix(ReachableAddress.maxCount).compactMap { address in
                    InviteURI.validHost(address).map { ReachableAddress(host: $0, port: bridge.port) }
                }
            case let .removed(name):
                discovered[name] = nil
            }
        }
    }

    /// The addresses to try now, first choice first.
    func candidates(configured: [ReachableAddress], invite: InviteURI?) -> [ReachableAddress] {
        guard invite == nil, let pin else { return configured }
        return BridgeDialer.candidates(
            discovered: discovered.keys.sorted().flatMap { discovered[$0] ?? [] },
            last: ReachableAddress(host: pin.host, port: pin.port), configured: configured,
            learned: ReachableAddress.list(pin.addresses ?? []))
    }
}

/// A message the bridge answers by its `id`.
protocol Identified { var id: String { get } }
extension GatewayCall: Identified {}
extension PushRegister: Identified {}
extension CanvasRefresh: Identified {}
