import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import NIOConcurrencyHelpers
import NIOCore

/// What the doors, the gateway link, the canvas relay and the operator ask of the driver: each
/// becomes an event for the core (`submit`), or work on the driver's own parts.
extension BridgeDriver {
    // MARK: - The gateway (called on the loop by `GatewayLinkHandler`)

    func nextLinkGeneration() -> Int { channels.nextLinkGeneration() }

    func gatewayUp(_ handler: GatewayLinkHandler) {
        channels.linkUp(handler)
        if channels.linksEstablished > 1 { metrics.gatewayReconnect() }
        submit(.gatewayUp(generation: handler.generation))
    }

    func gatewayDown(_ generation: Int) {
        channels.linkDown(generation)
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

    // MARK: - The canvas relay (any loop: these hop)

    /// The relay listens: nodes that connect from now on are told where, and with which pin.
    func setCanvas(_ relay: CanvasRelay, _ info: CanvasRelayInfo, status: RuntimeStatus.Canvas) async {
        await attach { $0.canvasRelay = relay }
        await submitAndWait(.canvas(info, status: status))
    }

    /// Whose capability this is, and what it opens upstream (a hit extends it): the core's
    /// answer to `.canvasUse`, by way of its action.
    func canvasUse(_ capability: String) -> EventLoopFuture<CanvasUse> {
        let promise = loop.makePromise(of: CanvasUse.self)
        loop.execute { [self] in
            let reply = replies.awaitCanvas(promise)
            submit(.canvasUse(capability, reply: reply), order: .now)
        }
        return promise.futureResult
    }

    /// The canvas host refused the gateway's capability for `node` (401): a fresh one, or nil.
    func refreshUpstreamCanvas(_ node: Fingerprint) -> EventLoopFuture<String?> {
        loop.flatSubmit { [self] in outlets.openClaw?.refreshCanvas(for: node) ?? loop.makeSucceededFuture(nil) }
    }

    // MARK: - The operator (any thread: these hop)

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
            let token = replies.awaitControl(promise, client: client)
            submit(.request(method: method.name, params: params, from: .control(token)), order: .freshStore)
        }
        return (try? await promise.futureResult.get()) ?? .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge is stopping"))
    }

    /// The control socket's client went away: what it still waits for is nobody's now.
    func controlClientClosed(_ client: Int) {
        loop.execute { [self] in
            let tokens = replies.tokens(of: client)
            guard !tokens.isEmpty else { return }
            submit(.controlLeft(tokens))
        }
    }

    /// `lanbridge gateway reconnect`: a link that is down dials at once instead of after its backoff.
    func reconnectGateway() async -> InvokeAnswer {
        let seen = try? await loop.submit { [self] in (dialler: outlets.gatewayDialler, up: channels.link != nil, openClaw: outlets.openClaw != nil) }.get()
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
            await submitAndWait(.canvasCertificateRotated(sha256: served.sha256))
            let announce = try await loop.submit { [self] in outlets.doorCertificateRotated }.get()
            announce(served.sha256)
            logger.notice("door certificate rotated (canvas relay and OpenClaw apps)", metadata: ["sha256": "\(served.sha256)"])
            return .success(.value(["tlsSha256": .string(served.sha256)]))
        } catch {
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "cannot rotate the certificate: \(error)"))
        }
    }

    // MARK: - The daemon (any thread: these hop)

    /// What `/healthz` and the gauges report, read on the loop.
    func snapshot() -> EventLoopFuture<BridgeHealth.Snapshot> {
        loop.submit { [self] in
            let core = health
            return BridgeHealth.Snapshot(
                listening: core.listening && !stopped, storeReadable: core.storeReadable, stateProblem: core.stateProblem,
                gatewayConfigured: core.gatewayConfigured, gatewayUp: channels.link != nil, gatewayStatus: core.gatewayStatus,
                paired: core.paired, pending: core.pending, connected: core.connected, foreground: core.foreground)
        }
    }

    /// Returns once the core has the new settings, so "reloaded" is never said before it is true
    /// (a request already on the loop could otherwise run under the old limits after it).
    func reload(_ settings: BridgeSettings) async {
        await submitAndWait(.reload(settings))
    }

    /// The addresses the bridge listens on; returns once runtime.json says so (the CLI, and
    /// whoever waits for "lanbridge listening", can rely on the file from then on).
    func setListening(_ addresses: [String], reachable: [String]) async {
        await submitAndWait(.listening(addresses, reachable: reachable))
        let status = try? await loop.submit { [self] in
            runtime.writtenNow()  // written here and now, with whatever was due
            return runtimeFile()
        }.get()
        guard let status else { return }
        let file = io.runtimeFile
        try? await io.run(on: loop) { try file.write(status) }.get()
    }

    /// Once a second: admission deadlines, pending requests, coalesced states, the heap; pings
    /// every `pingInterval`; the loop's lag every 250 ms.
    func startTimers(pingInterval: TimeInterval) {
        let first = NIODeadline.now()
        loop.execute { [self] in watch.watchLag(from: first) { [self] in stopped } }  // the gauge exists from the start
        loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [self] task in
            guard !stopped else { return task.cancel() }
            channels.admission.tick(now: .now)
            submit(.tick)
            let held = load
            watch.trimIfShrunk(held: held.keptBytes + held.connections * (16 << 10))
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
            // What waited for a read of the store runs after the shutdown, answered as a stopping bridge does.
            let held = stop()
            submit(.shutdown, order: .now)
            for event in held { event() }
            replies.stop()
        }.get()
        await io.finish(on: loop)
        io.runtimeFile.remove()
    }
}

extension ControlSocket {
    /// The control socket's connections, numbered for `request` and `controlClientClosed`.
    static let clients = NIOLockedValueBox(0)

    static func clientOpened() -> Int {
        clients.withLockedValue {
            $0 += 1
            return $0
        }
    }
}
