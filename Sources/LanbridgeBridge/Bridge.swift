import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOCore

/// The bridge's live state: one entry per connection, the pairing exchange for unpaired nodes, and
/// the reaction to changes the CLI makes in the state directory. All of it is isolated to this actor;
/// connections reach it through `open`, `receive` and `close`, in order, from their own tasks.
public actor Bridge {
    public typealias Outbound = NIOAsyncChannelOutboundWriter<[UInt8]>

    let configuration: BridgeConfiguration
    let identity: X25519.KeyPair
    let store: PairingStore
    let admission: Admission
    /// Live invites' PSKs, for the handshake, which runs on NIO's threads and must not touch files.
    let invites: InviteCache
    private let runtimeFile: RuntimeStatusFile
    var runtime: RuntimeStatus
    var logger: Logger
    var connections: [Int: Connection] = [:]
    /// The live paired session of each node (one at most: a reconnect replaces the old one).
    var sessions: [Fingerprint: Int] = [:]
    private var nextID = 0
    private var pingCounter = 0

    // Relaying (Bridge+Invoke, Bridge+Gateway)
    private(set) var settings: BridgeSettings
    /// `settings.limits.snapshotCommands`, parsed once (the config loader has checked them).
    private(set) var snapshotCommands: [CommandPattern]
    /// Paired nodes as last read, and the paired.json version they came from.
    var paired: [Fingerprint: PairedNode] = [:]
    /// Their access rules, parsed once per change of paired.json.
    var rules: [Fingerprint: CompiledRules] = [:]
    var lastState: PairingState
    var pairedVersion: String
    var router: InvokeRouter
    var waiters: [String: Reply<InvokeRouter.Result>] = [:]
    var timer: Task<Void, Never>?
    var timerDeadline: Date?
    /// Nodes seen since lastSeen was last written: flushed in one store update by `tick`, so a
    /// thousand nodes reconnecting cost one write of paired.json, not a thousand.
    var seen: Set<Fingerprint> = []
    /// False while the files cannot be read: new connections are refused rather than judged on
    /// stale rules.
    var storeReadable = true
    /// Denials recently audited, by origin, node, command and reason.
    var recentDenials: [String: (written: Date, suppressed: Int)] = [:]
    private var seenFlushed = Date.distantPast
    var idempotency = IdempotencyCache()
    var buckets: [String: TokenBucket] = [:]
    var nextRequest = 0
    /// The gateway link, when one is configured; events and node calls go through it.
    var uplink: (any GatewayUplink)?
    /// Code challenges per key and per address in the last hour.
    var challengeLimits = ChallengeLimits()

    enum Phase {
        /// Unpaired, XX: may only ask to pair.
        case unpaired
        /// Sent the challenge; waiting for the node to reveal the nonce it committed to.
        case challenged(requestId: String, commitment: [UInt8], bridgeNonce: [UInt8])
        /// The code is set; waiting for the operator.
        case waiting(requestId: String)
        /// Came in through an invite (XXpsk3): must redeem it with the secret.
        case invited(inviteID: [UInt8])
        case paired
    }

    final class Connection {
        let id: Int
        let key: PublicKey
        let address: String
        let handshake: SecureSession.HandshakeResult
        let outbound: Outbound
        let channel: any Channel
        var phase: Phase
        var foreground = true
        /// The foreground state last announced, and state changes since held back by the rate limit.
        var announcedForeground: Bool?
        var coalescedStates = 0
        /// Events dropped since the last summary (over the node's event limits).
        var droppedEvents = 0
        /// When the coalesced states and dropped events were last logged.
        var summarised = Date.distantPast
        let connectedAt = Date()
        /// Its place in the admission limits while it has not proved a paired key.
        var slot: Admission.Slot?
        /// The name an unpaired device gave in its pairing request (device-supplied), for logs.
        var claimedName: String?
        /// A newer session of the same node took over: closing this one is not the node leaving.
        var replaced = false
        /// `ip:port`, as every log line gives peers.
        var peer: String { PeerAddress.format(channel.remoteAddress) }

        init(id: Int, key: PublicKey, address: String, slot: Admission.Slot?, handshake: SecureSession.HandshakeResult, outbound: Outbound, channel: any Channel, phase: Phase) {
            (self.id, self.key, self.address, self.slot, self.handshake, self.outbound, self.channel, self.phase) = (id, key, address, slot, handshake, outbound, channel, phase)
        }

        var nodeId: Fingerprint { key.fingerprint }
        var isPaired: Bool { if case .paired = phase { true } else { false } }
    }

    /// `admission` and `invites` exist before the listener, which consults them from its first accept.
    init(configuration: BridgeConfiguration, identity: X25519.KeyPair, listening: [String], initial: PairingState,
         admission: Admission, invites: InviteCache, logger: Logger) {
        self.configuration = configuration
        self.identity = identity
        store = PairingStore(directory: configuration.stateDirectory)
        self.admission = admission
        self.invites = invites
        runtimeFile = RuntimeStatusFile(directory: configuration.stateDirectory)
        runtime = RuntimeStatus(bridgeName: configuration.name, listening: listening, startedAt: Date())
        self.logger = logger
        settings = configuration.settings
        snapshotCommands = configuration.settings.limits.snapshotCommands.compactMap { try? CommandPattern($0) }
        router = InvokeRouter(maxConcurrentPerNode: configuration.settings.limits.maxConcurrentInvokes)
        lastState = initial
        pairedVersion = store.pairedFileVersion()
        paired = Dictionary(initial.paired.nodes.map { ($0.nodeId, $0) }) { $1 }
        rules = paired.mapValues { CompiledRules($0.access) }
    }

    func attach(_ uplink: any GatewayUplink) { self.uplink = uplink }

    /// What log lines about a connection carry: the node's ID, its name (the paired one, else
    /// the one it claimed), and the peer address, always in the same form.
    func meta(_ connection: Connection, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        var fields: Logger.Metadata = ["node": "\(connection.nodeId)", "peer": "\(connection.peer)"]
        if let name = paired[connection.nodeId]?.details.displayName ?? connection.claimedName { fields["name"] = "\(name)" }
        return fields.merging(extra) { $1 }
    }

    /// SIGHUP: new access-rule defaults, command sets and limits apply from the next decision on.
    /// Invokes in flight keep the rules they were admitted under.
    func reload(_ new: BridgeSettings) {
        settings = new
        snapshotCommands = new.limits.snapshotCommands.compactMap { try? CommandPattern($0) }
        router.maxConcurrentPerNode = new.limits.maxConcurrentInvokes
        buckets.removeAll()  // rates refill under the new limits
    }

    // MARK: - Connections

    /// A connection finished its handshake. Returns its ID for `receive` and `close`.
    func open(_ handshake: SecureSession.HandshakeResult, address: String, slot: Admission.Slot?, outbound: Outbound, channel: any Channel) async -> Int {
        nextID += 1
        let id = nextID  // another open may run while this one awaits
        // The handshake checked the key's length; a malformed one is refused, never trapped on.
        guard let key = PublicKey(bytes: handshake.remoteStaticKey) else {
            admission.release(slot)
            channel.close(promise: nil)
            return id
        }
        // Paired keys and blocked keys both live in paired.json: the cache is current once its
        // version matches (one stat), so a connection costs no parse of a large file.
        await refreshIfChanged()
        guard storeReadable else {
            admission.release(slot)
            channel.close(promise: nil)
            return id
        }
        let state = lastState
        let phase: Phase = if case let .invite(id) = handshake.handshake { .invited(inviteID: id) }
            else if state.node(withKey: key) != nil { .paired } else { .unpaired }
        let connection = Connection(id: id, key: key, address: address, slot: slot, handshake: handshake, outbound: outbound, channel: channel, phase: phase)
        connections[connection.id] = connection
        if state.isBlocked(key) {
            logger.notice("refused blocked node", metadata: meta(connection))
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingRejected, message: "this device is blocked"))
            return connection.id
        }
        if connection.isPaired {
            await becomePaired(connection)
        } else {
            logger.info("unpaired node connected", metadata: meta(connection))
            await send(Welcome(bridgeName: configuration.name, paired: false, nodeId: connection.nodeId), to: connection)
        }
        return connection.id
    }

    func close(_ id: Int) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if sessions[connection.nodeId] == id { sessions[connection.nodeId] = nil }
        admission.release(connection.slot)
        // A replaced session closing is not the node going away.
        if connection.isPaired, !connection.replaced, runtime.nodes[connection.nodeId.description] != nil, sessions[connection.nodeId] == nil {
            runtime.nodes[connection.nodeId.description] = nil
            publishRuntime()
            logger.info("node disconnected", metadata: meta(connection))
            complete(router.nodeDisconnected(connection.nodeId.description))
            seen.insert(connection.nodeId)
            emit(.disconnected, node: connection.nodeId)
        }
    }

    func receive(_ bytes: [UInt8], from id: Int) async {
        guard let connection = connections[id] else { return }
        // One reader decides the message: strict JSON, then its type. Results keep their payload
        // as the validated bytes they arrived in, to be spliced on.
        let message: any SessionMessage
        do throws(SessionMessageError) {
            switch try SessionMessages.read(bytes) {
            case let .result(result) where connection.isPaired:
                return resultReceived(result, size: bytes.count, from: connection)
            case .result:
                logger.notice("unpaired node sent \(InvokeResult.type)", metadata: meta(connection))
                return await send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: connection)
            case let .message(decoded):
                message = decoded
            }
        } catch {
            logger.notice("bad message: \(error)", metadata: meta(connection))
            // A malformed answer fails its invoke now rather than leaving it to time out.
            if connection.isPaired, case let .malformed(invalid, type, id) = error, type == nil || type == InvokeResult.type {
                complete(router.malformedResult(invokeID: id, from: connection.nodeId.description, reason: invalid.description))
            }
            let reply = ErrorMessage(code: ErrorMessage.badMessage, message: "\(error)")
            if connection.isPaired { await send(reply, to: connection) } else { await fail(connection, reply) }
            return
        }
        switch message {
        case let ping as Ping:
            await send(Pong(id: ping.id), to: connection)
        case is Pong:
            break
        case let state as AppState where connection.isPaired:
            // The fast-fail always sees the latest state; what is announced (log, runtime.json,
            // gateway event) is rate-limited per node, and the rest coalesced into the next tick.
            connection.foreground = state.foreground
            if case .granted = take(.state, node: connection.nodeId) {
                announceState(of: connection)
            } else {
                connection.coalescedStates += 1
            }
        case let event as NodeEvent where connection.isPaired:
            nodeEvent(event, size: bytes.count, from: connection)
        case let call as GatewayCall where connection.isPaired:
            nodeCalled(call, on: connection)
        case let request as PairRequest:
            await pairingRequested(request, on: connection)
        case let reveal as PairReveal:
            await nonceRevealed(reveal, on: connection)
        case let redeem as InviteRedeem:
            await inviteRedeemed(redeem, on: connection)
        default:
            if connection.isPaired {
                await send(ErrorMessage(code: ErrorMessage.badMessage, message: "unexpected \(type(of: message).type) message"), to: connection)
            } else {
                // An unpaired key can do nothing but ask to pair: no detail, no metadata, no access.
                logger.notice("unpaired node sent \(type(of: message).type)", metadata: meta(connection))
                await send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: connection)
            }
        }
    }

    func announceState(of connection: Connection) {
        connection.announcedForeground = connection.foreground
        runtime.nodes[connection.nodeId.description]?.foreground = connection.foreground
        publishRuntime()
        logger.info("node moved to the \(connection.foreground ? "foreground" : "background")", metadata: meta(connection))
        emit(connection.foreground ? .foreground : .background, node: connection.nodeId)
    }

    /// A node's own event, relayed within its limits: size, count and bytes a minute.
    func nodeEvent(_ event: NodeEvent, size: Int, from connection: Connection) {
        let limits = settings.limits
        let refusal: String? = if size > limits.maxEventBytes { "larger than \(limits.maxEventBytes) bytes" }
            else if case .limited = take(.event, node: connection.nodeId) { "over \(limits.eventsPerMinute) events a minute" }
            else if case .limited = take(.eventBytes, node: connection.nodeId, count: size) { "over \(limits.eventBytesPerMinute) event bytes a minute" }
            else { nil }
        if let refusal {
            if connection.droppedEvents == 0 { logger.notice("dropped an event from this node: \(refusal)", metadata: meta(connection)) }
            connection.droppedEvents += 1
            return
        }
        emit(.nodeEvent, node: connection.nodeId, ["event": .string(event.event), "payload": event.payload ?? .null])
    }

    // MARK: - Reacting to the store

    /// Makes sure the cached pairing state is the one on disk (one `stat`): a change the CLI made
    /// a moment ago applies now, even before inotify reports it.
    func refreshIfChanged() async {
        if store.pairedFileVersion() != pairedVersion { await storeChanged() }
    }

    /// The CLI changed the files: tell waiting nodes the operator's decision, drop revoked ones.
    func storeChanged() async {
        let state: PairingState
        let version = store.pairedFileVersion()
        do { state = try store.read() } catch {
            logger.error("cannot read the pairing store: \(error)")
            storeReadable = false
            return
        }
        storeReadable = true
        pairedVersion = version
        paired = Dictionary(state.paired.nodes.map { ($0.nodeId, $0) }) { $1 }
        rules = paired.mapValues { CompiledRules($0.access) }
        announceChanges(from: lastState, to: state)
        lastState = state
        invites.replace(with: state)
        for connection in connections.values {
            switch connection.phase {
            case .waiting, .challenged:
                await resolveWaiting(connection, in: state)
            case .paired where state.node(withKey: connection.key) == nil:
                logger.info("pairing revoked; dropping the node", metadata: meta(connection))
                complete(router.cancelAll(forNode: connection.nodeId.description, code: ErrorMessage.nodeNotConnected,
                                          "the node's pairing was revoked"))
                await send(Revoked(nodeId: connection.nodeId), to: connection)
                connection.channel.close(promise: nil)
                connections[connection.id] = nil
                sessions[connection.nodeId] = nil
                runtime.nodes[connection.nodeId.description] = nil
                publishRuntime()
            default:
                break
            }
        }
    }

    // MARK: - Timers

    /// Expires stale requests and keeps connected nodes' requests alive (up to the hard cap). Writes
    /// the store only when something is due: an expiry, or a waiting request past half its TTL.
    func tick(now: Date) async {
        for connection in connections.values where connection.coalescedStates > 0 || connection.droppedEvents > 0 {
            // The state it ends in is announced at once; the counts go to the log once a minute.
            if connection.announcedForeground != connection.foreground { announceState(of: connection) }
            guard now.timeIntervalSince(connection.summarised) >= 60 else { continue }
            if connection.coalescedStates > 0 {
                logger.notice("\(connection.coalescedStates) state changes from this node coalesced (over \(settings.limits.statesPerMinute) a minute)",
                              metadata: meta(connection))
            }
            if connection.droppedEvents > 0 {
                logger.notice("dropped \(connection.droppedEvents) events from this node (over its event limits)", metadata: meta(connection))
            }
            (connection.coalescedStates, connection.droppedEvents, connection.summarised) = (0, 0, now)
        }
        if !seen.isEmpty, now.timeIntervalSince(seenFlushed) >= 30 { flushSeen(now: now) }
        let timing = configuration.pairingTiming
        let waiting = Set(connections.values.compactMap { c -> String? in if case let .waiting(id) = c.phase { id } else { nil } })
        // The cached state (kept current by inotify and the version check) is enough to tell
        // whether anything is due; reading the files every second would cost O(paired nodes).
        let due = lastState.pending.requests.contains { request in
            request.expiresAt <= now
                || (waiting.contains(request.requestId) && request.expiresAt.timeIntervalSince(now) < timing.timeToLive / 2
                    && request.expiresAt < request.createdAt.addingTimeInterval(timing.hardCap))
        }
        guard due else { return }
        _ = try? store.update(actor: "bridge") { state in
            for id in waiting { try? state.refresh(requestId: id, now: now, timing: timing) }
            _ = state.expire(now: now)
        }
        await storeChanged()
    }

    func pingAll() async {
        pingCounter += 1
        for connection in connections.values {
            await send(Ping(id: pingCounter), to: connection)
        }
    }

    func flushSeen(now: Date) {
        let nodes = seen
        seen.removeAll()
        seenFlushed = now
        _ = try? store.update(actor: "bridge") { state in nodes.forEach { state.recordSeen($0, now: now) } }
    }

    func shutdown() {
        for connection in connections.values where connection.isPaired { seen.insert(connection.nodeId) }
        if !seen.isEmpty { flushSeen(now: Date()) }
        complete(router.cancelAll(forNode: nil, code: ErrorMessage.unavailable, "the bridge is stopping"))
        timer?.cancel()
        for connection in connections.values { connection.channel.close(promise: nil) }
        connections.removeAll()
        runtimeFile.remove()
    }

    func setAdvertising(_ status: String, name: String?) {
        runtime.mdns = status
        runtime.mdnsName = name
        publishRuntime()
    }

    func publishRuntime() {
        do { try runtimeFile.write(runtime) } catch { logger.warning("cannot write \(runtimeFile.url.path): \(error)") }
    }

    // MARK: - Sending

    func send(_ message: some SessionMessage, to connection: Connection) async {
        do {
            try await connection.outbound.write(SessionMessages.encode(message))
        } catch {
            logger.debug("send failed: \(error)", metadata: meta(connection))
        }
    }

    /// Sends a final error and closes the connection.
    func fail(_ connection: Connection, _ error: ErrorMessage) async {
        await send(error, to: connection)
        connection.channel.close(promise: nil)
        close(connection.id)
    }
}

extension PairingError {
    var isRetryable: Bool {
        if case .tooManyFromAddress = self { true } else { false }
    }
}
