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
    /// What a client needs before it runs.
    public struct Configuration: Sendable {
        /// Where `FileKeyStore` keeps the key pair and the pin (unused with another `keyStore`).
        public var stateDirectory: URL
        /// Where the key pair and the pin live; nil: `FileKeyStore` in `stateDirectory`.
        public var keyStore: (any NodeKeyStore)?
        /// What the node tells the bridge when it pairs: name, platform, commands, capabilities.
        public var details: NodeDetails
        /// Whether the app starts in the foreground (sent on every connect).
        public var foreground: Bool
        /// The first reconnect delay, in seconds; it doubles after each failure.
        public var minimumBackoff: Double = 0.5
        /// The longest reconnect delay, in seconds.
        public var maximumBackoff: Double = 30
        /// How the client reaches the bridge; nil: `TCPNodeTransport` (tests pass a `FakeBridge`).
        public var transport: (any NodeTransport)?
        /// Browses for the pinned bridge (mDNS: `AvahiBrowser` on Linux, `NetworkBridgeBrowser` on
        /// Apple platforms) while `run` runs: what it finds is tried first. Nil: no browsing.
        public var discovery: (any BridgeDiscovery)?
        /// Whether handlers run on the client's event loop (the default: a quick handler answers
        /// without a hop between threads, which costs more than the invoke). While a handler runs
        /// synchronous code, its connection reads nothing: a handler with long synchronous work
        /// (encoding a large image) should await it elsewhere, or set this false to run every
        /// handler on Swift's concurrent executor. Needs macOS 15 / iOS 18; before, always false.
        public var handlersOnEventLoop = true
        /// A configuration with the file key store in `stateDirectory`.
        public init(stateDirectory: URL, details: NodeDetails, foreground: Bool = true) {
            (self.stateDirectory, self.details, self.foreground) = (stateDirectory, details, foreground)
        }
    }

    /// What happens to the client, in order, for every subscriber of `events`.
    public enum Event: Sendable, Equatable {
        /// Paired and connected: commands may arrive.
        case connected(bridgeName: String)
        /// Show this code to the user; the operator compares it with `lanbridge nodes pending`.
        case verificationCode(String, requestId: String)
        /// The request reached the operator and waits for a decision.
        case pairingPending(requestId: String)
        /// Approved: the bridge is pinned (its fingerprint, for the user to compare).
        case paired(bridgeFingerprint: String)
        /// The connection ended; `run` reconnects unless it throws.
        case disconnected(reason: String)
        /// The bridge sent an error message (PROTOCOL.md §9.5).
        case error(code: String, message: String)
        /// Where to load the agent's canvas pages, and the certificate to pin (PROTOCOL.md §9.7):
        /// with each session's welcome, and after `refreshCanvas()`.
        case canvas(CanvasAccess)
    }

    /// Reasons to stop trying: reconnecting would not help.
    public enum ClientError: Error, Equatable, CustomStringConvertible {
        /// The bridge presented another key than the pinned one (or the invite's fingerprint).
        case bridgeKeyMismatch(expected: String, presented: String)
        /// The operator rejected this device, or its key is blocked.
        case pairingRejected
        /// The request expired before the operator decided.
        case pairingExpired
        /// The operator removed this node's pairing; the pin is forgotten.
        case revoked
        /// Another connection with this node's key took over.
        case replaced
        /// The invite was unknown, expired or used.
        case inviteRefused(String)
        /// `run()` needs a pinned bridge: pair first (`run(host:port:)` or `run(invite:)`).
        case notPaired

        /// What went wrong and what to do, for people.
        public var description: String {
            switch self {
            case let .bridgeKeyMismatch(expected, presented):
                "the bridge presented key \(presented), but this node is paired with \(expected): refusing to connect (a different machine, or someone in the middle). Re-pair deliberately if the bridge was reinstalled."
            case .pairingRejected: "the operator rejected this device"
            case .pairingExpired: "the pairing request expired before the operator approved it; run again to ask anew"
            case .revoked: "the operator revoked this device's pairing"
            case .replaced: "another connection with this node's key replaced this one (is the app running twice?)"
            case let .inviteRefused(why): "the bridge refused the invite: \(why)"
            case .notPaired: "this node is not paired with a bridge yet: pair with an address or an invite first"
            }
        }
    }

    /// A command handler on JSON: params in (nil when the invoke had none), payload out. Throw a
    /// `LanbridgeError` to answer with its code; anything else answers `COMMAND_FAILED`.
    public typealias Handler = @Sendable (JSONValue?) async throws -> JSONValue

    /// A new subscription to the client's events: every subscriber sees every event from the
    /// moment it subscribes, each with its own buffer of the newest 256 (a slow consumer loses its
    /// own oldest events, and never holds up the client or other subscribers).
    public nonisolated var events: AsyncStream<Event> { emit.subscribe() }
    private nonisolated let emit = EventBroadcast<Event>(bufferSize: 256)
    /// This node's ID, as the operator sees it.
    public nonisolated let nodeID: String
    private let configuration: Configuration
    private let identity: X25519.KeyPair
    private let store: any NodeKeyStore
    private var pin: BridgePin?
    private var handlers: [String: Handler] = [:]
    private var foreground: Bool
    private let transport: any NodeTransport
    private var connection: NodeConnection?
    /// The protocol of the current connection (`NodeSession`): this actor only carries out what it
    /// decides.
    private var session: NodeSession?
    /// Counts connections, so a handler that finishes after its connection ended cannot answer on
    /// the next one (whose session may use the same run keys).
    private var sessionGeneration = 0
    /// Handlers running for invokes of the current connection, by the session's run key: cancelled
    /// when it says so (invoke.cancel, or the connection's end).
    private var running: [Int: Task<Void, Never>] = [:]
    private var calls: [String: CheckedContinuation<Result<JSONValue?, ErrorMessage>, Never>] = [:]
    /// The timer for the session's earliest request deadline.
    private var deadlineTimer: (deadline: Moment, task: Scheduled<Void>)?
    private var nextCall = 0
    /// The agent's canvas, as the bridge last said (nil: this bridge has no canvas host).
    public private(set) var canvas: CanvasAccess?
    /// What `discovery` currently sees of the pinned bridge, by service name.
    private var discovered: [String: [ReachableAddress]] = [:]
    private let logger: Logger
    /// The event loop the client runs on, and its connections' channels too: a message from the
    /// bridge reaches the client, and the answer the socket, without a hop between threads (a hop
    /// costs more than the invoke). Handlers start on it too, unless configured not to.
    private nonisolated let eventLoop: any EventLoop
    /// The client's executor: its connection's event loop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }
    /// The event loop as a task executor (an `EventLoopTaskExecutor`; nil on older systems): the
    /// connection's reader runs on it, and handlers too when `handlersOnEventLoop`.
    private nonisolated let eventLoopExecutor: (any Sendable)?

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

    private func canvasGiven(_ access: CanvasAccess?) {
        canvas = access
        if let access { emit.yield(.canvas(access)) }
    }

    /// Sends a message that the bridge answers by its `id` (`gateway.result`, `push.result`), and
    /// waits for that answer, the deadline, or the connection's end.
    private func request<M: SessionMessage & Identified>(timeout: Duration, _ make: (Int) -> M) async throws(LanbridgeError) -> JSONValue? {
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
    private func answer(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) {
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

    private func run(configured: [ReachableAddress], invite: InviteURI?) async throws {
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
    private func browse(_ discovery: any BridgeDiscovery) async {
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
    private func candidates(configured: [ReachableAddress], invite: InviteURI?) -> [ReachableAddress] {
        guard invite == nil, let pin else { return configured }
        return BridgeDialer.candidates(
            discovered: discovered.keys.sorted().flatMap { discovered[$0] ?? [] },
            last: ReachableAddress(host: pin.host, port: pin.port), configured: configured,
            learned: ReachableAddress.list(pin.addresses ?? []))
    }

    // MARK: - One connection

    /// A connection whose handshake finished with the right key, from the race.
    private struct Dialed: Sendable {
        let connection: NodeConnection
        let bridgeKey: [UInt8]
        let handshakeHash: [UInt8]
    }

    private func connectOnce(configured: [ReachableAddress], invite: InviteURI?) async throws -> String {
        let candidates = candidates(configured: configured, invite: invite)
        let (transport, identity, eventLoop) = (self.transport, self.identity, self.eventLoop)
        let expected = pin?.publicKey.bytes
        let dialed: Dialed, address: ReachableAddress
        do {
            (dialed, address) = try await BridgeDialer.race(
                candidates,
                attempt: { address in
                    let connection = try await transport.connect(host: address.host, port: address.port, identity: identity, invite: invite, on: eventLoop)
                    do {
                        var iterator = connection.events.makeAsyncIterator()
                        guard case let .established(bridgeKey, handshakeHash) = try await iterator.next() else {
                            throw invite == nil
                                ? DialError.closedDuringHandshake
                                : ClientError.inviteRefused("closed before the handshake finished (used, expired or unknown invite)")
                        }
                        try Self.checkBridgeKey(bridgeKey, pinned: expected, invite: invite)
                        return Dialed(connection: connection, bridgeKey: bridgeKey, handshakeHash: handshakeHash)
                    } catch {
                        connection.close()
                        throw error
                    }
                }, discard: { $0.connection.close() })
        } catch let failed as BridgeDialer.AllFailed {
            // One address: its verdict stands (a wrong key is someone in the middle). Several: a
            // wrong key at one (a stale address now used by another bridge) fails only that one.
            if candidates.count == 1, let only = failed.failures.first?.error as? ClientError { throw only }
            // A refused invite is refused wherever it is dialled.
            for case let .inviteRefused(why) in failed.failures.compactMap({ $0.error as? ClientError }) { throw ClientError.inviteRefused(why) }
            throw failed
        }
        return try await serve(dialed, at: address, invite: invite)
    }

    private enum DialError: Error, CustomStringConvertible {
        /// The bridge (or whatever answered) closed before the handshake finished.
        case closedDuringHandshake
        var description: String { "the connection closed during the handshake" }
    }

    private func serve(_ dialed: Dialed, at address: ReachableAddress, invite: InviteURI?) async throws -> String {
        let connection = dialed.connection
        self.connection = connection
        sessionGeneration += 1
        let bridgeKey = PublicKey(bytes: dialed.bridgeKey)
        session = NodeSession(
            .init(
                details: configuration.details, handshakeHash: dialed.handshakeHash, pinned: pin != nil,
                inviteSecret: invite?.secret, nodeNonce: SecureRandom.bytes(VerificationCode.nonceLength), foreground: foreground))
        defer {
            connection.close()
            handleQuietly(.closed)
            self.connection = nil
            session = nil
            deadlineTimer?.task.cancel()
            deadlineTimer = nil
        }
        // The stream's `next()` is nonisolated: without a preference it runs on Swift's global
        // executor, two thread hops per message (there and back to the event loop). With the
        // event loop as the task's executor, a message is read and answered on one thread.
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), let executor = eventLoopExecutor as? EventLoopTaskExecutor {
            try await withTaskExecutorPreference(executor) {
                try await receive(connection, bridgeKey: bridgeKey, address: address, invite: invite)
            }
        } else {
            try await receive(connection, bridgeKey: bridgeKey, address: address, invite: invite)
        }
        return "connection closed"
    }

    private func receive(_ connection: NodeConnection, bridgeKey: PublicKey?, address: ReachableAddress, invite: InviteURI?) async throws {
        for try await event in connection.events {
            guard case let .message(bytes) = event, let message = try? SessionMessages.decode(bytes) else { continue }
            try await perform(handle(.received(message)), bridgeKey: bridgeKey, address: address, invite: invite)
        }
    }

    /// Feeds the session an event, now; its actions, to carry out.
    private func handle(_ event: NodeSession.Event) -> [NodeSession.Action] {
        guard var current = session else {
            if case let .request(id, _, _, _) = event {  // no connection: the call is answered at once
                answer(id, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "not connected to the bridge", retryable: true)))
            }
            return []
        }
        session = nil  // the only reference while it changes: its tables are changed in place, not copied
        let actions = current.handle(event, now: .now)
        session = current
        return actions
    }

    /// For events that cannot fail the session (the app's, a handler's, the clock's, the close):
    /// what is bookkeeping is done now, in this turn; messages go out after, in order, on the
    /// connection open now.
    private func handleQuietly(_ event: NodeSession.Event) {
        var messages: [NodeSession.Action] = []
        for action in handle(event) {
            switch action {
            case .send: messages.append(action)
            case let .cancelHandler(key): running.removeValue(forKey: key)?.cancel()
            case let .answer(id, result): answer(id, result)
            default: messages.append(action)  // not produced by these events; carried out in order all the same
            }
        }
        rescheduleDeadline()
        guard !messages.isEmpty, let connection else { return }
        let generation = sessionGeneration
        Task { try? await self.perform(messages, generation: generation, on: connection) }
    }

    /// Carries out what the session decided. A failure ends the connection by throwing.
    private func perform(
        _ actions: [NodeSession.Action], bridgeKey: PublicKey? = nil, address: ReachableAddress? = nil, invite: InviteURI? = nil,
        generation: Int? = nil, on connection: NodeConnection? = nil
    ) async throws {
        let connection = connection ?? self.connection
        let generation = generation ?? sessionGeneration
        for action in actions {
            switch action {
            case let .send(message):
                try? await connection?.send(SessionMessages.encode(message))
            case .authorize:
                try await connection?.authorize()
            case let .pin(bridgeName, addresses):
                if let bridgeKey, let address {
                    try remember(bridgeKey, name: bridgeName, address: address, addresses: addresses ?? invite.map { $0.addresses.map(\.description) })
                }
            case let .startHandler(key, invoke):
                guard let connection else { continue }
                running[key] = startHandler {
                    let result = await self.run(invoke)
                    await self.finished(key, result, generation: generation, on: connection)
                }
            case let .cancelHandler(key):
                running.removeValue(forKey: key)?.cancel()
            case let .answer(id, result):
                answer(id, result)
            case let .canvas(access):
                canvas = access
                emit.yield(.canvas(access))
            case let .notify(notice):
                switch notice {
                case let .verificationCode(code, requestId): emit.yield(.verificationCode(code, requestId: requestId))
                case let .pairingPending(requestId): emit.yield(.pairingPending(requestId: requestId))
                case let .connected(bridgeName): emit.yield(.connected(bridgeName: bridgeName))
                case let .bridgeError(code, message): emit.yield(.error(code: code, message: message))
                }
            case let .end(failure):
                switch failure {
                case .revoked:
                    try? store.forgetPin()
                    pin = nil
                    throw ClientError.revoked
                case .rejected: throw ClientError.pairingRejected
                case .expired: throw ClientError.pairingExpired
                case .replaced: throw ClientError.replaced
                case let .inviteRefused(why): throw ClientError.inviteRefused(why)
                }
            }
        }
        rescheduleDeadline()
    }

    /// One timer, for the session's earliest request deadline.
    private func rescheduleDeadline() {
        guard let next = session?.nextDeadline else {
            deadlineTimer?.task.cancel()
            deadlineTimer = nil
            return
        }
        guard deadlineTimer?.deadline != next else { return }
        deadlineTimer?.task.cancel()
        let task = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, next.nanoseconds)))) {
            Task { await self.deadlinePassed() }
            return ()
        }
        deadlineTimer = (next, task)
    }

    private func deadlinePassed() {
        deadlineTimer = nil
        handleQuietly(.tick)
    }

    private static func checkBridgeKey(_ bridgeKey: [UInt8], pinned: [UInt8]?, invite: InviteURI?) throws {
        let presented = Fingerprint(publicKey: bridgeKey)
        if let pinned, pinned != bridgeKey {
            throw ClientError.bridgeKeyMismatch(expected: Fingerprint(publicKey: pinned).description, presented: presented.description)
        }
        if let invite, invite.bridgeFingerprint != presented {
            throw ClientError.bridgeKeyMismatch(expected: invite.bridgeFingerprint.description, presented: presented.description)
        }
    }

    /// Paired and connected: pins the bridge, or remembers where it answered and what it listed.
    private func remember(_ key: PublicKey, name: String, address: ReachableAddress, addresses: [String]?) throws {
        let listed = addresses.map { ReachableAddress.list($0).map(\.description) }
        if pin == nil {
            let newPin = BridgePin(
                publicKey: key, fingerprint: key.fingerprint, host: address.host, port: address.port,
                addresses: listed, bridgeName: name, pairedAt: Date())
            try store.save(newPin)
            pin = newPin
            emit.yield(.paired(bridgeFingerprint: key.fingerprint.description))
        } else if var known = pin, known.host != address.host || known.port != address.port || (listed != nil && listed != known.addresses) {
            (known.host, known.port) = (address.host, address.port)
            if let listed { known.addresses = listed }
            // Best effort: a store that cannot be written only loses what was learned.
            do { try store.save(known) } catch { logger.warning("could not remember the bridge's addresses: \(error)") }
            pin = known
        }
    }

    /// The app's handler for an invoke, its answer as a result.
    private func run(_ invoke: Invoke) async -> InvokeResult {
        let result: InvokeResult
        if let handler = handlers[invoke.command] {
            do {
                result = InvokeResult(id: invoke.id, payload: try await handler(invoke.params))
            } catch let error as LanbridgeError {
                result = InvokeResult(id: invoke.id, error: error.errorMessage)
            } catch let error as ErrorMessage {
                result = InvokeResult(id: invoke.id, error: error)
            } catch {
                result = InvokeResult(id: invoke.id, error: ErrorMessage(code: "COMMAND_FAILED", message: "\(error)"))
            }
        } else {
            result = InvokeResult(id: invoke.id, error: ErrorMessage(code: "UNKNOWN_COMMAND", message: "this node has no \(invoke.command) command"))
        }
        return result
    }

    /// Starts an invoke's handler: on the client's event loop (a quick handler answers without a
    /// thread hop), or on Swift's concurrent executor when the configuration says so.
    private func startHandler(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        if configuration.handlersOnEventLoop, #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            return Task(executorPreference: eventLoopExecutor as? EventLoopTaskExecutor, operation: body)
        }
        return Task(operation: body)
    }

    /// A handler's answer goes back on the connection its invoke came on, and only if the session
    /// still waits for it (not cancelled, the connection not ended).
    private func finished(_ key: Int, _ result: InvokeResult, generation: Int, on connection: NodeConnection) async {
        guard generation == sessionGeneration else { return }
        running[key] = nil
        try? await perform(handle(.handlerFinished(key: key, result)), generation: generation, on: connection)
    }
}

/// A message the bridge answers by its `id`.
protocol Identified { var id: String { get } }
extension GatewayCall: Identified {}
extension PushRegister: Identified {}
extension CanvasRefresh: Identified {}
