import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Logging

/// The bridge's whole live state and every decision on it, sans I/O: events go in (a node
/// connected, sent a message, closed; the gateway asked, came up, went down; the store changed;
/// time passed), actions come out (send, close, answer, write the store, publish the runtime file,
/// arm a timer). The driver (`BridgeDriver`) feeds it on one event loop and carries the actions
/// out; tests feed it directly, with a fake clock.
///
/// Time comes in with each event: `now` (monotonic) for deadlines and buckets, `wall` for what is
/// stored or shown. Logs are written directly: they observe, they decide nothing.
package struct BridgeCore {
    package let name: String
    package let pairingTiming: PairingState.Timing
    /// What to log, recorded; the driver logs it (`.log` actions). Tests set its level.
    package var logger: CoreLog
    /// The bridge's nonces for code challenges (tests give their own).
    package var random: @Sendable (Int) -> [UInt8] = { SecureRandom.bytes($0) }

    package private(set) var settings: BridgeSettings
    package internal(set) var gate: InvokeGate
    /// What runtime.json says but the nodes (its `nodes` is built from `live` when published).
    package internal(set) var runtime: RuntimeStatus
    /// The connected, paired nodes, by node: the live table the core decides with (issue 39 §2),
    /// apart from the file's model, which keys them by text.
    package internal(set) var live: [Fingerprint: RuntimeStatus.Node] = [:]

    package internal(set) var connections: [ConnectionID: Connection] = [:]
    /// The live paired session of each node (one at most: a reconnect replaces the old one).
    package internal(set) var sessions: [Fingerprint: ConnectionID] = [:]

    // The store, as last read.
    package internal(set) var lastState: PairingState
    /// paired.json's version (`PairingStore.pairedFileVersion`) that `lastState` came from.
    package internal(set) var pairedVersion: String
    package internal(set) var paired: [Fingerprint: PairedNode] = [:]
    /// Their access rules, parsed once per change of paired.json.
    package internal(set) var rules: [Fingerprint: CompiledRules] = [:]
    /// False while the files cannot be read: new connections are refused rather than judged on
    /// stale rules.
    package internal(set) var storeReadable = true
    /// Why not, while it cannot.
    package internal(set) var storeProblem: String?

    // Invokes and requests.
    package internal(set) var router: InvokeRouter
    /// Who waits for each invoke in flight (by the router's request ID), and its idempotency slot.
    package internal(set) var waiters: [String: Waiter] = [:]
    package internal(set) var idempotency = IdempotencyCache()
    /// Invokes waiting for their node (`hold`), and when each node was last woken for them.
    package internal(set) var held = HeldInvokes()
    package internal(set) var buckets = RateBuckets()
    package internal(set) var nextRequest = 0
    package internal(set) var armedDeadline: Moment?
    /// Denials recently audited, by origin, node, command and reason.
    package internal(set) var recentDenials: [String: (written: Moment, suppressed: Int)] = [:]

    // The gateway link.
    package internal(set) var gateway = GatewayLinkState()

    // Pairing.
    package internal(set) var challengeLimits = ChallengeLimits()
    /// Store changes in progress, by operation ID, and the connection each one is for.
    package internal(set) var storeOperations: [Int: (connection: ConnectionID?, change: StoreOperation.Change)] = [:]
    package internal(set) var nextOperation = 0

    /// Nodes seen since lastSeen was last written: flushed in one store update by `tick`, so a
    /// thousand nodes reconnecting cost one write of paired.json, not a thousand.
    package internal(set) var seen: Set<Fingerprint> = []
    package internal(set) var seenFlushed = Moment.distantPast
    package internal(set) var pingCounter = 0

    /// The moment of the event being handled (each event brings its own).
    package internal(set) var now = Moment.distantPast
    /// Actions of the event being handled.
    package internal(set) var actions: [BridgeAction] = []
    package internal(set) var runtimeChanged = false

    package struct Waiter {
        package var target: AnswerTarget
        /// The idempotency slot this invoke answers for, if it had a key.
        package var slot: String?
        /// For the metrics: what was invoked, and when the bridge took it.
        package var command: String
        package var started: Moment
    }

    /// Counters and the latency histogram (observations only; nothing here decides).
    /// What to count, recorded; the driver counts it (`.count` actions).
    package internal(set) var metrics = CoreMetrics()
    /// The canvas relay, once it listens (nil: no canvas), and who may use it.
    package internal(set) var canvasRelay: CanvasRelayInfo?
    package internal(set) var canvasGrants = CanvasGrants()

    /// Which gateway the bridge links to, if any.
    package enum GatewayKind: Sendable { case lanbridge, openClaw }

    package init(name: String, settings: BridgeSettings, pairingTiming: PairingState.Timing, runtime: RuntimeStatus,
         initial: PairingState, pairedVersion: String, gateway kind: GatewayKind? = nil, logger: Logger) {
        self.name = name
        self.settings = settings
        self.pairingTiming = pairingTiming
        self.runtime = runtime
        self.logger = CoreLog(level: logger.logLevel)  // the logger's level only: lines leave as actions
        gate = InvokeGate(settings: settings)
        router = InvokeRouter(maxConcurrentPerNode: settings.limits[.maxConcurrentInvokes])
        held.limits = HeldInvokes.Limits(settings.limits)
        lastState = initial
        self.pairedVersion = pairedVersion
        gateway.configured = kind != nil
        gateway.openClaw = kind == .openClaw
        index(initial)
    }

    // MARK: - Plumbing

    /// runtime.json as it stands: the status, with the live nodes keyed as the file keys them.
    package func runtimeFile() -> RuntimeStatus {
        var file = runtime
        file.nodes = Dictionary(uniqueKeysWithValues: live.map { ($0.key.description, $0.value) })
        return file
    }

    /// Ends an event: the actions it produced, with the runtime file's publication last.
    mutating func drain() -> [BridgeAction] {
        if runtimeChanged {
            runtimeChanged = false
            actions.append(.publishRuntime)
        }
        let lines = logger.take(), counts = metrics.take()
        if !lines.isEmpty { actions.append(.log(lines)) }
        if !counts.isEmpty { actions.append(.count(counts)) }
        // Handed over, not copied: `removeAll(keepingCapacity:)` on the buffer just returned (now
        // shared) allocated one of the high-water size on every later event.
        var out: [BridgeAction] = []
        swap(&out, &actions)
        return out
    }

    mutating func send(_ message: some SessionMessage, to id: ConnectionID) {
        actions.append(.send(id, message))
    }

    /// Sends a final error and closes the connection.
    mutating func fail(_ id: ConnectionID, _ error: ErrorMessage) {
        send(error, to: id)
        actions.append(.close(id))
        closed(id)
    }

    /// What log lines about a connection carry: the node's ID, its name (the paired one, else
    /// the one it claimed), and the peer address, always in the same form.
    func meta(_ connection: Connection, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        var fields: Logger.Metadata = ["node": "\(connection.nodeId)", "peer": "\(connection.peer)"]
        if let name = paired[connection.nodeId]?.details.displayName ?? connection.claimedName { fields["name"] = "\(name)" }
        return fields.merging(extra) { $1 }
    }

    func pairedConnection(_ node: Fingerprint) -> Connection? {
        sessions[node].flatMap { connections[$0] }.flatMap { $0.isPaired ? $0 : nil }
    }

    private mutating func index(_ state: PairingState) {
        paired = [:]
        rules = [:]
        for node in state.paired.nodes { index(node) }
    }

    /// One paired node into the index (a redeemed invite's at once, before the store's next read).
    mutating func index(_ node: PairedNode) {
        paired[node.nodeId] = node
        rules[node.nodeId] = CompiledRules(node.access)
    }

    // MARK: - Settings

    /// SIGHUP: new access-rule defaults, command sets and limits apply from the next decision on.
    /// Invokes in flight keep the rules they were admitted under.
    mutating func reload(_ new: BridgeSettings) {
        settings = new
        gate = InvokeGate(settings: new)
        router.maxConcurrentPerNode = new.limits[.maxConcurrentInvokes]
        held.limits = HeldInvokes.Limits(new.limits)
        buckets.removeAll()  // rates refill under the new limits
        reofferChangedCommands()
    }

    mutating func setAdvertising(_ status: String, name: String?) {
        (runtime.mdns, runtime.mdnsName) = (status, name)
        runtimeChanged = true
    }

    mutating func setListening(_ addresses: [String], reachable: [String]) {
        runtime.listening = addresses
        runtime.reachable = reachable
        runtimeChanged = true
    }

    mutating func setGatewayStatus(_ status: String) {
        if runtime.gateway != status {
            runtime.gateway = status
            runtimeChanged = true
        }
    }

    mutating func setControlSocket(_ path: String) {
        runtime.controlSocket = path
        runtimeChanged = true
    }

    mutating func setConsole(_ url: String) {
        runtime.console = url
        runtimeChanged = true
    }

    // MARK: - Connections

    /// A connection finished its handshake. The driver has made sure `lastState` is the store as
    /// it is now (one `stat`).
    mutating func opened(_ opening: Opening, wall: Date) {
        // The handshake checked the key's length; a malformed one is refused, never trapped on.
        guard let key = PublicKey(bytes: opening.handshake.remoteStaticKey), storeReadable else {
            if let slot = opening.slot { actions.append(.releaseSlot(slot)) }
            actions.append(.close(opening.id))
            return
        }
        let phase: Phase = if case let .invite(id) = opening.handshake.handshake { .invited(inviteID: id) }
            else if let node = lastState.node(withKey: key), node.openClawApp?.deviceId == opening.app?.claim.deviceId { .paired } else { .unpaired }
        var connection = Connection(id: opening.id, key: key, nodeId: key.fingerprint, address: opening.address, peer: opening.peer, local: opening.local,
                                    handshakeHash: opening.handshake.handshakeHash, phase: phase, connectedAt: wall, slot: opening.slot)
        connection.app = opening.app?.claim
        connections[opening.id] = connection
        if lastState.isBlocked(key) {
            logger.notice("refused blocked node", metadata: meta(connection))
            fail(opening.id, ErrorMessage(code: ErrorMessage.pairingRejected, message: "this device is blocked"))
        } else if connection.isPaired {
            becomePaired(opening.id)
        } else if let app = opening.app {
            if let token = app.bootstrapToken {
                appBootstrapRedeemed(token, claim: app.claim, details: app.details.sanitized(), on: connection, wall: wall)
            } else {
                appPairingRequested(app.claim, details: app.details.sanitized(), on: connection, wall: wall)
            }
        } else {
            logger.info("unpaired node connected", metadata: meta(connection))
            send(Welcome(bridgeName: name, paired: false, nodeId: connection.nodeId), to: opening.id)
        }
    }

    /// The connection's channel closed (or the core closed it).
    mutating func closed(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if sessions[connection.nodeId] == id { sessions[connection.nodeId] = nil }
        if let slot = connection.slot { actions.append(.releaseSlot(slot)) }
        // What went out on this connection cannot be answered on another (nor on a newer session).
        if connection.isPaired { complete(router.connectionClosed(id)) }
        if connection.isPaired, sessions[connection.nodeId] == nil { canvasSessionEnded(connection.nodeId) }
        // A replaced session closing is not the node going away.
        guard connection.isPaired, !connection.replaced, sessions[connection.nodeId] == nil,
              live.removeValue(forKey: connection.nodeId) != nil else { return }
        runtimeChanged = true
        logger.info("node disconnected", metadata: meta(connection))
        seen.insert(connection.nodeId)
        emit(.disconnected, node: connection.nodeId)
    }

    /// A message already read by `SessionMessages.read` (a large one is, off the relay loop).
    mutating func received(_ read: SessionMessages.Checked, size: Int, from id: ConnectionID, wall: Date) {
        guard let connection = connections[id] else { return }
        let message: any SessionMessage
        do throws(SessionMessageError) {
            switch try read.get() {
            case let .result(result) where connection.isPaired:
                resultReceived(result, size: size, from: connection, now: now)
                return
            case .result:
                logger.notice("unpaired node sent \(InvokeResult.type)", metadata: meta(connection))
                send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: id)
                return
            case let .message(decoded):
                message = decoded
            }
        } catch {
            logger.notice("bad message: \(error)", metadata: meta(connection))
            // A malformed answer fails its invoke now rather than leaving it to time out.
            if connection.isPaired, case let .malformed(invalid, type, invokeID) = error, type == nil || type == InvokeResult.type {
                complete(router.malformedResult(invokeID: invokeID, from: connection.nodeId.description, connection: id, reason: invalid.description))
            }
            let reply = ErrorMessage(code: ErrorMessage.badMessage, message: "\(error)")
            if connection.isPaired { send(reply, to: id) } else { fail(id, reply) }
            return
        }
        switch message {
        case let ping as Ping:
            send(Pong(id: ping.id), to: id)
        case is Pong:
            break
        case let state as AppState where connection.isPaired:
            // The fast-fail always sees the latest state; what is announced (log, runtime.json,
            // gateway event) is rate-limited per node, and the rest coalesced into the next tick.
            connections[id]?.foreground = state.foreground
            if case .granted = buckets.take(.state, node: connection.nodeId, limits: settings.limits, now: now) {
                announceState(of: id)
            } else {
                connections[id]?.coalescedStates += 1
            }
        case let event as NodeEvent where connection.isPaired:
            nodeEvent(event, size: size, from: connection, now: now, wall: wall)
        case let call as GatewayCall where connection.isPaired:
            nodeCalled(call, on: connection, now: now)
        case let register as PushRegister where connection.isPaired:
            pushRegistered(register, on: connection, wall: wall)
        case let refresh as CanvasRefresh where connection.isPaired:
            send(canvasRefreshed(refresh, for: connection, wall: wall), to: id)
        case let request as PairRequest:
            pairingRequested(request, on: connection, now: now, wall: wall)
        case let reveal as PairReveal:
            nonceRevealed(reveal, on: connection, wall: wall)
        case let redeem as InviteRedeem:
            inviteRedeemed(redeem, on: connection, wall: wall)
        default:
            if connection.isPaired {
                send(ErrorMessage(code: ErrorMessage.badMessage, message: "unexpected \(type(of: message).type) message"), to: id)
            } else {
                // An unpaired key can do nothing but ask to pair: no detail, no metadata, no access.
                logger.notice("unpaired node sent \(type(of: message).type)", metadata: meta(connection))
                send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: id)
            }
        }
        // A node that came back, moved to the front, or finished an invoke: what waits for it may run.
        if !held.isEmpty, connection.isPaired, connections[id] != nil, held.count(forNode: connection.nodeId) > 0 {
            deliverHeld(connection.nodeId, now: now, wall: wall)
        }
    }

    mutating func announceState(of id: ConnectionID) {
        guard let connection = connections[id] else { return }
        connections[id]?.announcedForeground = connection.foreground
        live[connection.nodeId]?.foreground = connection.foreground
        runtimeChanged = true
        logger.info("node moved to the \(connection.foreground ? "foreground" : "background")", metadata: meta(connection))
        emit(connection.foreground ? .foreground : .background, node: connection.nodeId)
    }

    /// A node's own event, relayed within its limits: size, count and bytes a minute.
    mutating func nodeEvent(_ event: NodeEvent, size: Int, from connection: Connection, now: Moment, wall: Date) {
        let limits = settings.limits
        // With OpenClaw, the names the bridge makes from a node's calls are not a plain event's
        // to use: they start agent runs, which the `agent` limit counts.
        let refusal: String? = if gateway.openClaw, OpenClawNodeEvents.reserved.contains(event.event) { "\(event.event) comes only from its calls" }
            else if size > limits[.maxEventBytes] { "larger than \(limits[.maxEventBytes]) bytes" }
            else if case .limited = buckets.take(.event, node: connection.nodeId, limits: limits, now: now) { "over \(limits[.eventsPerMinute]) events a minute" }
            else if case .limited = buckets.take(.eventBytes, node: connection.nodeId, count: size, limits: limits, now: now) {
                "over \(limits[.eventBytesPerMinute]) event bytes a minute"
            } else { nil }
        if let refusal {
            if connection.droppedEvents == 0 { logger.notice("dropped an event from this node: \(refusal)", metadata: meta(connection)) }
            connections[connection.id]?.droppedEvents += 1
            return
        }
        if gateway.openClaw {
            // On the node's own socket, if the catalogue lets this node say it.
            guard let payload = openClawEventPayload(event, from: connection, now: now, wall: wall) else { return }
            return actions.append(.openClawEvent(node: connection.nodeId, event: event.event, payload: payload, tag: nil))
        }
        emit(.nodeEvent, node: connection.nodeId, ["event": .string(event.event), "payload": event.payload ?? .null])
    }

    // MARK: - The store

    /// The files changed (the CLI, or the bridge's own write): tell waiting nodes the operator's
    /// decision, drop revoked ones.
    mutating func storeChanged(_ state: PairingState, version: String) {
        (storeReadable, storeProblem) = (true, nil)
        pairedVersion = version
        index(state)
        announceChanges(from: lastState, to: state)
        lastState = state
        reofferChangedCommands()
        actions.append(.replaceInvites(state))
        let pairedNow = paired
        end(held.revoked(where: { pairedNow[$0] == nil }))
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            switch connection.phase {
            case .waiting, .challenged:
                resolveWaiting(connection.id)
            case .paired where state.node(withKey: connection.key) == nil:
                logger.info("pairing revoked; dropping the node", metadata: meta(connection))
                complete(router.cancelAll(forNode: connection.nodeId.description, code: ErrorMessage.nodeNotConnected,
                                          "the node's pairing was revoked"))
                send(Revoked(nodeId: connection.nodeId), to: connection.id)
                actions.append(.close(connection.id))
                connections[connection.id] = nil
                sessions[connection.nodeId] = nil
                canvasSessionEnded(connection.nodeId)
                buckets.forget(connection.nodeId)
                if live.removeValue(forKey: connection.nodeId) != nil { runtimeChanged = true }
            default:
                break
            }
        }
    }

    mutating func storeUnreadable(_ error: any Error) {
        logger.error("cannot read the pairing store: \(error)")
        (storeReadable, storeProblem) = (false, "cannot read the pairing store: \(error)")
    }

    // MARK: - Time

    /// Once a second: announces coalesced states, flushes lastSeen, and keeps pending requests
    /// alive or expires them. Writes the store only when something is due.
    mutating func tick(wall: Date) {
        for connection in connections.values where connection.coalescedStates > 0 || connection.droppedEvents > 0 || connection.droppedResults > 0 {
            // The state it ends in is announced at once; the counts go to the log once a minute.
            if connection.announcedForeground != connection.foreground { announceState(of: connection.id) }
            guard now.timeIntervalSince(connection.summarised) >= 60 else { continue }
            if connection.coalescedStates > 0 {
                logger.notice("\(connection.coalescedStates) state changes from this node coalesced (over \(settings.limits[.statesPerMinute]) a minute)",
                              metadata: meta(connection))
            }
            if connection.droppedEvents > 0 {
                logger.notice("dropped \(connection.droppedEvents) events from this node (over its event limits)", metadata: meta(connection))
            }
            if connection.droppedResults > 0 {
                logger.notice("dropped \(connection.droppedResults) more results from this node that answered no invoke in flight",
                              metadata: meta(connection))
            }
            connections[connection.id]?.coalescedStates = 0
            connections[connection.id]?.droppedEvents = 0
            connections[connection.id]?.droppedResults = 0
            connections[connection.id]?.summarised = now
        }
        if !seen.isEmpty, now.timeIntervalSince(seenFlushed) >= 30 { flushSeen(now: now, wall: wall) }
        idempotency.expire(now: now)
        let waiting = Set(connections.values.compactMap { c -> String? in if case let .waiting(id) = c.phase { id } else { nil } })
        // The cached state (kept current by inotify and the version check) is enough to tell
        // whether anything is due; reading the files every second would cost O(paired nodes).
        let due = lastState.pending.requests.contains { request in
            request.expiresAt <= wall
                || (waiting.contains(request.requestId) && request.expiresAt.timeIntervalSince(wall) < pairingTiming.timeToLive / 2
                    && request.expiresAt < request.createdAt.addingTimeInterval(pairingTiming.hardCap))
        }
        if due, !storeOperations.values.contains(where: { if case .maintain = $0.change { true } else { false } }) {
            updateStore(.maintain(waiting: waiting, now: wall, timing: pairingTiming), for: nil)
        }
    }

    /// A ping to every connection, each written without waiting for any other.
    mutating func pingAll() {
        pingCounter += 1
        for id in connections.keys.sorted() { send(Ping(id: pingCounter), to: id) }
    }

    mutating func flushSeen(now: Moment, wall: Date) {
        guard !seen.isEmpty else { return }
        updateStore(.recordSeen(seen, now: wall), for: nil)
        seen.removeAll()
        seenFlushed = now
    }

    mutating func updateStore(_ change: StoreOperation.Change, for connection: ConnectionID?) {
        nextOperation += 1
        storeOperations[nextOperation] = (connection, change)
        actions.append(.updateStore(StoreOperation(id: nextOperation, change: change)))
    }

    /// The bridge is stopping: lastSeen is written, invokes fail, connections close.
    mutating func shutdown(wall: Date) {
        for connection in connections.values where connection.isPaired { seen.insert(connection.nodeId) }
        flushSeen(now: now, wall: wall)
        complete(router.cancelAll(forNode: nil, code: ErrorMessage.unavailable, "the bridge is stopping"))
        end(held.stopping())
        for id in connections.keys.sorted() { actions.append(.close(id)) }
        connections.removeAll()
        sessions.removeAll()
    }
}
