import FoundationEssentials
import LanbridgeCrypto
import LanbridgeCore
import LanbridgeNet
import LanbridgeStores
import LanbridgeTransport
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs the `BridgeCore` on one event loop: node channels, the gateway link and timers call in on
/// that loop, the core decides, and the driver carries the actions out there and then. Sends are
/// `writeAndFlush` on channels of the same loop; the only work that leaves the loop is file I/O
/// (`StateIO`), whose results come back as events.
///
/// Everything here is confined to `loop`; methods that may be called from elsewhere say so and hop.
final class BridgeDriver: NodeSessionDriver, @unchecked Sendable {
    let loop: any EventLoop
    private var core: BridgeCore
    private let io: StateIO
    private let admission: Admission
    private let invites: InviteCache
    private let logger: Logger
    let metrics: BridgeMetrics
    private let wakeHook: WakeHook
    private var linksEstablished = 0

    /// Node channels, by connection ID, and the admission slots of those still in their handshake.
    private var channels: [ConnectionID: any Channel] = [:]
    private var handshaking: [ConnectionID: Admission.Slot] = [:]
    private var nextConnection = 0

    /// The gateway link now up, if any.
    private var link: GatewayLinkHandler?
    /// With the OpenClaw gateway protocol: the nodes' sockets there (set before the bridge listens).
    var openClaw: OpenClawLinks?
    /// The canvas relay, when there is a canvas host (set before the bridge listens).
    var canvasRelay: CanvasRelay?
    /// The link's dialler, for `lanbridge gateway reconnect` (set before the control socket listens).
    var gatewayDialler: GatewayLink?
    /// The certificate both TLS doors serve, when either is on.
    let doorTLS: DoorTLS?
    /// Told each rotated certificate's SHA-256 (the mDNS advertisement for OpenClaw's apps names it); set before the first rotation can come.
    nonisolated(unsafe) var doorCertificateRotated: @Sendable (String) -> Void = { _ in }
    /// Told, on the loop, when what the console shows live has changed: an invoke started or stopped
    /// waiting for the operator, or the activity feed grew. Set before the console listens.
    nonisolated(unsafe) var liveChanged: @Sendable (ConsoleEvents.Topic) -> Void = { _ in }
    /// Runs the notify hook; set before the control socket and the doors open.
    nonisolated(unsafe) var askNotifier: AskNotifier?
    private var shownAsks = 0
    private var shownActivity = 0
    /// One descriptor budget for every listener (nil in tests that build a driver alone).
    let descriptors: DescriptorGate?
    /// Node connections' places in that budget, by their admission slot, until proved or gone.
    private var tickets: [Admission.Slot: DescriptorGate.Ticket] = [:]
    private var nextGeneration = 0

    /// Control-socket requests waiting for their answer, with the connection each came on.
    private var controlRequests: [Int: (promise: EventLoopPromise<InvokeAnswer>, client: Int)] = [:]
    /// The relay's questions about capabilities, waiting for the core's `.canvasUsed`.
    private var canvasReplies: [Int: EventLoopPromise<CanvasUse>] = [:]
    private var nextCanvasReply = 0
    private var nextControl = 0
    private let controlClients = NIOLockedValueBox(0)

    /// Events held until the store has been read again (a change the CLI made a moment ago applies
    /// to the next decision), in arrival order; and whether that read is under way.
    private var held: [() -> Void] = []
    private var reading = false
    /// inotify reported a change while a read was under way: read once more after it.
    private var readAgain = false

    /// Channels written to since the last flush (`flushSoon`).
    private var unflushed: Set<ConnectionID> = []
    private var linkUnflushed = false
    private var flushScheduled = false

    private var timer: Scheduled<Void>?
    /// runtime.json changed since it was last written (the write is due or scheduled).
    private var runtimeDue = false
    private var lastRuntimeWrite = NIODeadline.distantPast
    private var stopped = false

    /// paired.json's path, kept: the version check runs before every decision.
    private let pairedPath: String

    init(
        loop: any EventLoop, core: BridgeCore, io: StateIO, admission: Admission, invites: InviteCache, metrics: BridgeMetrics = .disabled,
        doorTLS: DoorTLS? = nil, descriptors: DescriptorGate? = nil, logger: Logger
    ) {
        (self.loop, self.core, self.io, self.admission, self.invites, self.metrics, self.logger) = (loop, core, io, admission, invites, metrics, logger)
        (self.doorTLS, self.descriptors) = (doorTLS, descriptors)
        wakeHook = WakeHook(directory: io.store.directory, logger: logger, metrics: metrics)
        pairedPath = io.store.pairedURL.path
    }

    // MARK: - Nodes (called on the loop by `NodeSessionHandler`)

    /// A new channel, before its handshake: its connection ID.
    func accepted(_ channel: any Channel, slot: Admission.Slot, ticket: DescriptorGate.Ticket? = nil) -> ConnectionID {
        loop.preconditionInEventLoop()
        nextConnection += 1
        channels[nextConnection] = channel
        handshaking[nextConnection] = slot
        if let ticket { tickets[slot] = ticket }
        return nextConnection
    }

    func established(_ id: ConnectionID, _ handshake: SecureSession.HandshakeResult, address: String, peer: String) {
        let slot = handshaking.removeValue(forKey: id)
        withFreshStore { [self] in
            guard channels[id] != nil else {
                if let slot { admission.release(slot) }
                return
            }
            let local = channels[id]?.localAddress?.ipAddress
            decide(.opened(.init(id: id, handshake: handshake, address: address, peer: peer, slot: slot, local: local)))
        }
    }

    /// One of OpenClaw's apps proved its device at the front door (issue 38): from here on it is a
    /// connection like a node's, keyed by a hash of its device key, with no Noise underneath.
    func appEstablished(_ id: ConnectionID, _ device: OpenClawAppSession.Device, tlsSha256: String?, address: String, peer: String) {
        let slot = handshaking.removeValue(forKey: id)
        let key = OpenClawAppClaim.nodeKey(ed25519: device.publicKey)
        let claim = OpenClawAppClaim(deviceId: device.deviceId, publicKey: Base64URL.encode(device.publicKey), clientId: device.clientId, tlsSha256: tlsSha256)
        // A stand-in for a handshake: the key, and a hash no other session shares.
        let handshake = SecureSession.HandshakeResult(remoteStaticKey: key.bytes, handshakeHash: SecureRandom.bytes(32), version: 1, handshake: .xx)
        withFreshStore { [self] in
            guard channels[id] != nil else {
                if let slot { admission.release(slot) }
                return
            }
            let local = channels[id]?.localAddress?.ipAddress
            decide(.opened(.init(id: id, handshake: handshake, address: address, peer: peer, slot: slot, local: local, app: (claim, device.details, device.bootstrapToken))))
        }
    }

    /// Messages this large or larger are read (strict JSON, type, a result's payload) on a worker
    /// thread: a 16 MiB result holds the scanner for tens of milliseconds (longer if it is all
    /// keys), and every other node would wait for the relay loop meanwhile. Below it, the hop
    /// costs more than the read.
    static let offLoopBytes = 64 * 1024

    /// Reads a message on the blocking pool; the outcome comes back on the loop.
    func check(_ bytes: [UInt8]) -> EventLoopFuture<SessionMessages.Checked> {
        NIOThreadPool.singleton.runIfActive(eventLoop: loop) { SessionMessages.check(bytes) }
            .recover { _ in SessionMessages.check(bytes) }  // no pool (never, in practice): read here
    }

    func closed(_ id: ConnectionID) {
        channels[id] = nil
        if let slot = handshaking.removeValue(forKey: id) {
            admission.release(slot)
            tickets[slot] = nil
        }
        inOrder { [self] in decide(.closed(id)) }
    }

    // MARK: - The canvas relay (any loop: these hop)

    /// The relay listens: nodes that connect from now on are told where, and with which pin.
    func setCanvas(_ relay: CanvasRelay, _ info: CanvasRelayInfo, status: RuntimeStatus.Canvas) async {
        try? await loop.submit { [self] in
            canvasRelay = relay
            decide(.canvas(info, status: status))
        }.get()
    }

    /// `lanbridge gateway reconnect`: a link that is down dials at once instead of after its backoff.
    func reconnectGateway() async -> InvokeAnswer {
        let seen = try? await loop.submit { [self] in (dialler: gatewayDialler, up: link != nil, openClaw: openClaw != nil) }.get()
        guard let seen, let dialler = seen.dialler else {
            let why = seen?.openClaw == true ? "with OpenClaw's gateway each node's socket redials on its own" : "no gateway is configured"
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: why))
        }
        if seen.up { return .success(.value(["redialled": false, "state": "up"])) }
        let now = dialler.redialNow()
        return .success(.value(["redialled": .bool(now), "state": .string(now ? "dialling" : "already dialling")]))
    }

    /// `lanbridge canvas rotate-cert` with the daemon up: a new key and certificate, kept, served
    /// by both doors to new connections at once, and announced to every connected node
    /// (`canvas.grant`). Without a door that serves TLS, the file alone changes (the CLI does that).
    func rotateDoorCertificate() async -> InvokeAnswer {
        guard let doorTLS else {
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "neither the canvas relay nor a TLS door for OpenClaw's apps is on"))
        }
        do {
            let served = try doorTLS.rotate()
            try await loop.submit { [self] in decide(.canvasCertificateRotated(sha256: served.sha256)) }.get()
            doorCertificateRotated(served.sha256)
            logger.notice("door certificate rotated (canvas relay and OpenClaw apps)", metadata: ["sha256": "\(served.sha256)"])
            return .success(.value(["tlsSha256": .string(served.sha256)]))
        } catch {
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "cannot rotate the certificate: \(error)"))
        }
    }

    /// Whose capability this is, and what it opens upstream (a hit extends it): the core's
    /// answer to `.canvasUse`, by way of its action.
    func canvasUse(_ capability: String) -> EventLoopFuture<CanvasUse> {
        let promise = loop.makePromise(of: CanvasUse.self)
        loop.execute { [self] in
            nextCanvasReply += 1
            canvasReplies[nextCanvasReply] = promise
            decide(.canvasUse(capability, reply: nextCanvasReply))
        }
        return promise.futureResult
    }

    /// The canvas host refused the gateway's capability for `node` (401): a fresh one, or nil.
    func refreshUpstreamCanvas(_ node: Fingerprint) -> EventLoopFuture<String?> {
        loop.flatSubmit { [self] in openClaw?.refreshCanvas(for: node) ?? loop.makeSucceededFuture(nil) }
    }

    // MARK: - The gateway (called on the loop by `GatewayLinkHandler`)

    func nextLinkGeneration() -> Int {
        loop.preconditionInEventLoop()
        nextGeneration += 1
        return nextGeneration
    }

    func gatewayUp(_ handler: GatewayLinkHandler) {
        link = handler
        linksEstablished += 1
        if linksEstablished > 1 { metrics.gatewayReconnect() }
        inOrder { [self] in decide(.gatewayUp(generation: handler.generation)) }
    }

    func gatewayDown(_ generation: Int) {
        if link?.generation == generation { link = nil }
        submit(.gatewayDown(generation: generation))
    }

    func gatewayFrame(_ frame: GatewayFrame, generation: Int) {
        switch frame {
        case let .request(id, method, params):
            // Decided on the store the core holds: inotify brings every change, and each CLI write
            // waits for the daemon to hold it (`store.applied`), so no `stat` per request.
            submit(.request(method: method, params: params, from: .gateway(generation: generation, requestID: id)))
        case let .response(id, result):
            submit(.gatewayAnswered(id: id, result, generation: generation))
        case let .event(name, _):
            logger.debug("gateway event \(name)")
        }
    }

    // MARK: - From elsewhere (these hop to the loop)

    /// A connection to the control socket: its number, for `request` and `controlClientClosed`.
    func controlClientOpened() -> Int {
        controlClients.withLockedValue {
            $0 += 1; return $0
        }
    }

    /// A method the driver answers itself (`ControlMethod.Spec.answeredBy == .driver`).
    func carryOut(_ method: ControlMethod) async -> InvokeAnswer {
        switch method {
        case .canvasRotateCertificate: await rotateDoorCertificate()
        case .gatewayReconnect: await reconnectGateway()
        default: .failure(ErrorMessage(code: ErrorMessage.unknownMethod, message: "\(method.name) is not the driver's"))
        }
    }

    /// A request from the operator's control socket (or the console, as the operator), for the
    /// core to answer like the gateway's.
    func request(_ method: ControlMethod, params: JSONValue?, client: Int = 0) async -> InvokeAnswer {
        let promise = loop.makePromise(of: InvokeAnswer.self)
        loop.execute { [self] in
            nextControl += 1
            let token = nextControl
            controlRequests[token] = (promise, client)
            withFreshStore { [self] in decide(.request(method: method.name, params: params, from: .control(token))) }
        }
        return (try? await promise.futureResult.get()) ?? .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge is stopping"))
    }

    /// The control socket's client went away: what it still waits for is nobody's now.
    func controlClientClosed(_ client: Int) {
        loop.execute { [self] in
            let tokens = Set(controlRequests.filter { $0.value.client == client }.keys)
            guard !tokens.isEmpty else { return }
            inOrder { [self] in decide(.controlLeft(tokens)) }
        }
    }

    /// What `/healthz` and the gauges report, read on the loop.
    func snapshot() -> EventLoopFuture<BridgeHealth.Snapshot> {
        loop.submit { [self] in
            let nodes = core.live.values
            return BridgeHealth.Snapshot(
                listening: !core.runtime.listening.isEmpty && !stopped, storeReadable: core.storeReadable, stateProblem: core.stateWrites.summary,
                gatewayConfigured: core.gateway.configured, gatewayUp: link != nil, gatewayStatus: core.runtime.gateway ?? "off",
                paired: core.lastState.paired.nodes.count, pending: core.lastState.pending.requests.count,
                connected: nodes.count, foreground: nodes.filter(\.foreground).count)
        }
    }

    /// inotify saw the CLI (or the bridge) replace a store file.
    func storeMayHaveChanged() {
        loop.execute { [self] in readStoreSoon() }
    }

    /// Returns once the core has the new settings, so "reloaded" is never said before it is true
    /// (a request already on the loop could otherwise run under the old limits after it).
    func reload(_ settings: BridgeSettings) async {
        try? await loop.submit { [self] in decide(.reload(settings)) }.get()
    }

    /// The addresses the bridge listens on; returns once runtime.json says so (the CLI, and
    /// whoever waits for "lanbridge listening", can rely on the file from then on).
    func setListening(_ addresses: [String], reachable: [String]) async {
        let status = try? await loop.submit { [self] in
            _ = core.handle(.listening(addresses, reachable: reachable), now: .now, wall: Date())  // written below, not published
            runtimeDue = false  // written here and now
            lastRuntimeWrite = .now()
            return core.runtimeFile()
        }.get()
        guard let status else { return }
        let file = io.runtimeFile
        try? await io.run(on: loop) { try file.write(status) }.get()
    }

    // MARK: - The loop's own health

    /// The longest event since the last lag check, and what it was: a stall is logged with it.
    private var longest: (nanoseconds: UInt64, what: String) = (0, "")
    private var lastStallLog = NIODeadline.distantPast

    /// Runs one event, timing it: no single event may hold the relay loop for long, and when one
    /// does, the log says which.
    private func timed(_ what: @autoclosure () -> String, _ event: () -> Void) {
        let start = NIODeadline.now()
        event()
        let took = (NIODeadline.now() - start).nanoseconds
        if took > longest.nanoseconds { longest = (UInt64(took), what()) }
    }

    /// Every 250 ms: how late this check itself ran (the loop's lag, a gauge in the metrics); a
    /// lag over a second is logged (at most once a minute), naming the longest event since the
    /// last check.
    private func checkLag(expected: NIODeadline) {
        let now = NIODeadline.now()
        let lag = max(0, Double((now - expected).nanoseconds) / 1e9)
        metrics.loopLag(seconds: lag)
        if lag > 1, now - lastStallLog > .seconds(60) {
            lastStallLog = now
            logger.warning(
                "the relay loop was held for \(NumberText.fixed(lag)) s; the longest event was \(longest.what) (\(NumberText.fixed(Double(longest.nanoseconds) / 1e9)) s)")
        }
        longest = (0, "")
        guard !stopped else { return }
        let next = now + Self.lagInterval
        loop.scheduleTask(deadline: next) { [self] in checkLag(expected: next) }
    }

    private static let lagInterval = TimeAmount.milliseconds(250)

    /// What the bridge holds for peers (kept answers, and about 16 KiB a connection), at its peak
    /// since the heap was last trimmed.
    private var heldPeak = 0
    private var lastTrim = NIODeadline.distantPast

    /// glibc keeps freed pages for reuse: once what the bridge held has shrunk to a quarter of a
    /// peak of 8 MiB or more (the nodes left, the idempotency window passed), the heap is trimmed
    /// on the I/O thread, at most once a minute, so the memory goes back to the system (issue 41).
    private func trimHeapIfShrunk() {
        let held = core.book.idempotency.bytesKept + core.connections.count * (16 << 10)
        heldPeak = max(heldPeak, held)
        guard heldPeak >= 8 << 20, held < heldPeak / 4, NIODeadline.now() - lastTrim >= .minutes(1) else { return }
        (heldPeak, lastTrim) = (held, .now())
        io.trimHeap()
    }

    /// Once a second: admission deadlines, pending requests, coalesced states; pings every
    /// `pingInterval`.
    func startTimers(pingInterval: TimeInterval) {
        let first = NIODeadline.now()
        loop.execute { [self] in checkLag(expected: first) }  // the gauge exists from the start
        loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [self] task in
            guard !stopped else { return task.cancel() }
            admission.tick(now: .now)
            submit(.tick)
            trimHeapIfShrunk()
        }
        let ping = TimeAmount.interval(pingInterval)
        loop.scheduleRepeatedTask(initialDelay: ping, delay: ping) { [self] task in
            guard !stopped else { return task.cancel() }
            submit(.pingAll)
        }
    }

    /// Writes lastSeen, fails what is in flight, closes every connection, and waits for the files.
    func shutdown() async {
        try? await loop.submit { [self] in
            stopped = true
            timer?.cancel()
            decide(.shutdown)
            for (_, request) in controlRequests { request.promise.succeed(.failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge is stopping"))) }
            controlRequests.removeAll()
            runtimeDue = false
        }.get()
        await io.finish(on: loop)
        io.runtimeFile.remove()
    }

    // MARK: - Ordering against the store

    /// Runs `event` once the cached store is the one on disk (one `stat`; a read off the loop when
    /// it changed), after any events already held. For what is rare and must not wait for inotify:
    /// a node's connection (a revoke by hand edit holds at once) and the operator's control socket
    /// (`store.applied` is how the CLI learns its write is in force).
    private func withFreshStore(_ event: @escaping () -> Void) {
        // Stopped: no read will come to release a held event, and the core answers everything as
        // a stopped bridge does.
        if stopped { return event() }
        if held.isEmpty, !reading {
            if PairingStore.version(ofFile: pairedPath) == core.pairedVersion { return event() }
            readStore()
        }
        held.append(event)
    }

    /// Runs `event` now, unless events before it are held for the store: then after them.
    private func inOrder(_ event: @escaping () -> Void) {
        if held.isEmpty, !reading { event() } else { held.append(event) }
    }

    /// Reads the store now, or once more after the read under way (on the loop).
    private func readStoreSoon() {
        if reading { readAgain = true } else { readStore() }
    }

    private func readStore() {
        guard !stopped else {
            // No read after a stop: what was held for one runs now, against the stopped core
            // (which answers it as a stopping bridge), instead of waiting for ever.
            while !held.isEmpty { held.removeFirst()() }
            return
        }
        reading = true
        io.read(on: loop).whenComplete { [self] result in
            reading = false
            switch result {
            case let .success((version, state)): timed(Self.label(.storeChanged(state, version: version))) { decide(.storeChanged(state, version: version)) }
            case let .failure(error): decide(.storeUnreadable(error))
            }
            // Changed again during the read: read again before anything held runs.
            if readAgain || (core.storeReadable && io.store.pairedFileVersion() != core.pairedVersion) {
                readAgain = false
                return readStore()
            }
            while !held.isEmpty, !reading { held.removeFirst()() }
        }
    }

    // MARK: - The one way in

    /// How an event waits its turn.
    enum Order {
        /// After any event held for the store's read, in arrival order: a node's message, a
        /// gateway frame, an OpenClaw socket's news.
        case inOrder
        /// Once the cached store is the one on disk (one `stat`): a new connection, the operator.
        case freshStore
        /// At once: the daemon's own setup and status.
        case now
    }

    /// Every event for the core comes in here, from any thread (it hops to the loop). Each is
    /// timed: one that holds the loop long is named in the stall log.
    func submit(_ event: BridgeEvent, order: Order = .inOrder) {
        guard loop.inEventLoop else { return loop.execute { [self] in submit(event, order: order) } }
        let run = { [self] in timed(Self.label(event)) { decide(event) } }
        switch order {
        case .inOrder: inOrder(run)
        case .freshStore: withFreshStore(run)
        case .now: run()
        }
    }

    /// What the stall log calls an event (made only for a slow one).
    static func label(_ event: BridgeEvent) -> String {
        switch event {
        case let .received(bytes, id): "a \(bytes.count)-byte message from connection \(id)"
        case let .receivedRead(_, size, id): "a \(size)-byte message from connection \(id)"
        case let .request(method, _, _): "a \(method) request"
        case let .openClawInvoke(node, _): "an OpenClaw invoke for \(node)"
        case .storeChanged: "the store's new state"
        case .storeUpdated: "a store update's outcome"
        case .timerFired: "the invoke deadline timer"
        case .tick: "the once-a-second tick"
        case .pingAll: "the pings to every connection"
        default: String(describing: event).prefix(60).description
        }
    }

    // MARK: - Carrying actions out

    /// An event for the core, at this moment; what it decides is carried out.
    private func decide(_ event: BridgeEvent) {
        perform(core.handle(event, now: .now, wall: Date()))
        if core.book.asked.generation != shownAsks {
            shownAsks = core.book.asked.generation
            liveChanged(.asks)
        }
        if core.activity.nextSeq != shownActivity {
            shownActivity = core.activity.nextSeq
            liveChanged(.activity)
        }
    }

    private func perform(_ actions: [BridgeAction]) {
        for action in actions {
            switch action {
            case let .send(id, message):
                let bytes = SessionMessages.encode(message)
                let invoke = message as? Invoke
                if invoke != nil { metrics.relayed(bytes: bytes.count, toGateway: false) }
                guard let channel = channels[id] else { continue }
                channel.write(NodeOutbound(bytes: bytes, invokeID: invoke?.id), promise: nil)
                unflushed.insert(id)
                flushSoon()
            case let .withdraw(id, invokeID):
                channels[id]?.triggerUserOutboundEvent(NodeOutbox.Withdraw(invokeID: invokeID), promise: nil)
            case let .authorize(id):
                channels[id]?.triggerUserOutboundEvent(SecureChannelHandler.Authorize(), promise: nil)
            case let .close(id):
                // What was written for it goes out before the close (an error saying why).
                if unflushed.remove(id) != nil { channels[id]?.flush() }
                channels[id]?.close(promise: nil)
            case let .toGateway(generation, frame):
                writeToLink(generation) { $0.send(frame, flush: false) }
            case let .answer(.gateway(generation, requestID), answer):
                writeToLink(generation) { $0.send(GatewayFrame.response(id: requestID, answer: answer), flush: false) }
            case let .answer(.control(token), answer):
                controlRequests.removeValue(forKey: token)?.promise.succeed(answer)
            case let .answer(.openClaw(node, invokeID), answer):
                openClaw?.answer(node, invokeID, answer)
            case let .nodePresence(presence):
                openClaw?.presence(presence)
            case let .openClawEvent(node, event, payload, tag):
                openClaw?.nodeEvent(event, payload: payload, tag: tag, on: node)
            case let .canvasRevoked(node):
                canvasRelay?.revoke(node)
            case let .canvasUsed(reply, use):
                canvasReplies.removeValue(forKey: reply)?.succeed(use)
            case let .refreshUpstreamCanvas(node):
                _ = openClaw?.refreshCanvas(for: node)
            case let .log(lines):
                for line in lines { logger.log(level: line.level, line.message, metadata: line.metadata) }
            case let .count(records):
                for record in records {
                    switch record {
                    case let .held(count): metrics.held(count)
                    case let .relayed(bytes, toGateway): metrics.relayed(bytes: bytes, toGateway: toGateway)
                    case let .resultDropped(reason): metrics.resultDropped(reason)
                    case let .invoke(command, outcome, seconds): metrics.invoke(command: command, outcome: outcome, seconds: seconds)
                    }
                }
            case let .updateStore(operation):
                let store = io.store
                io.run(on: loop) { try operation.carryOut(on: store) }.whenComplete { [self] result in
                    decide(.storeUpdated(operation: operation.id, result.mapError { $0 }))
                    // The bridge's own change reaches the core now, not when inotify reports it.
                    if io.store.pairedFileVersion() != core.pairedVersion || operation.changesPending { readStoreSoon() }
                }
            case let .audit(entries):
                metrics.auditAppended(entries.count)
                io.record(entries, on: loop)
            case let .probeState(read):
                let directory = io.store.directory
                io.run(on: loop) { directory.writeProblem(files: StateIO.storeFiles) }.whenComplete { [self] result in
                    let problem: String? =
                        switch result {
                        case let .success(problem): problem
                        case let .failure(error): "\(error)"
                        }
                    decide(.stateProbed(problem: problem))
                    if read { readStoreSoon() }
                }
            case .publishRuntime:
                publishSoon()
            case let .replaceInvites(state):
                invites.replace(with: state)
            case let .releaseSlot(slot):
                admission.release(slot)
                // Released as paired (or gone, when the close comes first): no longer evictable.
                descriptors?.prove(tickets.removeValue(forKey: slot))
            case let .slotWaiting(slot):
                admission.waiting(slot)
                // A request waiting for the operator keeps its connection (its own cap is maxWaiting).
                descriptors?.prove(tickets.removeValue(forKey: slot))
            case let .wake(call):
                wakeHook.run(call)
            case let .notifyOperator(settings, prompt):
                askNotifier?.notify(prompt, settings)
            case let .armTimer(deadline):
                timer?.cancel()
                timer = loop.scheduleTask(deadline: NIODeadline.uptimeNanoseconds(UInt64(max(0, deadline.nanoseconds)))) { [self] in
                    submit(.timerFired)
                }
            }
        }
    }

    /// Writes to the link of `generation`, if it is still the one up; flushed with the rest.
    private func writeToLink(_ generation: Int, _ write: (GatewayLinkHandler) -> Void) {
        guard let link, link.generation == generation else { return }
        write(link)
        linkUnflushed = true
        flushSoon()
    }

    /// Writes are flushed once per turn of the loop, after every event it found ready has been
    /// carried out (the tasks the loop runs next): a burst of invokes or results read at once
    /// leaves in one system call per channel, not one each.
    private func flushSoon() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.execute { [self] in
            flushScheduled = false
            for id in unflushed { channels[id]?.flush() }
            unflushed.removeAll(keepingCapacity: true)
            if linkUnflushed {
                linkUnflushed = false
                link?.flush()
            }
        }
    }

    /// runtime.json is written at once after a quiet spell, and under a burst at most every 50 ms,
    /// or 50 µs per connection when there are more than a thousand (with the latest status): one
    /// change shows as soon as it happens, and a thousand nodes reconnecting cost a few writes, not
    /// a thousand. Each write is linear in the nodes, so a fixed interval made a 10,000-node storm
    /// spend a third of its CPU writing the file (issue 53 §4); now its cost per node stays flat.
    private func publishSoon() {
        guard !stopped, !runtimeDue else { return }
        runtimeDue = true
        let due = lastRuntimeWrite + Self.runtimeInterval(connections: core.connections.count)
        if due <= .now() { return writeRuntime() }
        loop.scheduleTask(deadline: due) { [self] in writeRuntime() }
    }

    static func runtimeInterval(connections: Int) -> TimeAmount {
        max(.milliseconds(50), .microseconds(Int64(connections) * 50))
    }

    private func writeRuntime() {
        guard runtimeDue, !stopped else { return }
        runtimeDue = false
        lastRuntimeWrite = .now()
        io.publish(core.runtimeFile(), on: loop)
    }
}

extension StoreOperation {
    /// Changes to pending.json only (its version is not watched by the stat): read after them.
    var changesPending: Bool {
        switch change {
        case .redeemInvite, .recordSeen: false
        default: true
        }
    }
}
