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
/// stored or shown. Log lines are recorded (`CoreLog`) and leave as `.log` actions for the driver to
/// write: they observe, they decide nothing.
package struct BridgeCore {
    package let name: String
    package let pairingTiming: PairingState.Timing
    /// What to log, recorded; the driver logs it (`.log` actions). Tests set its level.
    package var logger: CoreLog
    /// The core's randomness: code challenges' nonces, ask IDs, the invoke ID prefix (tests give their own).
    package let random: @Sendable (Int) -> [UInt8]

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
    /// Whether the state directory takes writes (issue 61 §1), and when to look at it (and at a
    /// store that cannot be read) again.
    package internal(set) var stateWrites = StateWrites()
    /// The wall clock less the monotonic one at the last tick: a change of it is a step of the
    /// wall clock (issue 61 §2), logged once, and applied to the lifetimes held in memory.
    package internal(set) var clockOffset: TimeInterval?

    // Invokes: in flight, held, joined by a retry; and each node's rates.
    package internal(set) var book: InvokeBook
    package internal(set) var buckets = RateBuckets()

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

    /// The moment of the event being handled (each event brings its own), and the wall clock's.
    package internal(set) var now = Moment.distantPast
    package internal(set) var wall = Date.distantPast
    /// Every invoke's outcome, newest last, bounded (`lanbridge activity`).
    package internal(set) var activity: ActivityFeed
    /// Actions of the event being handled.
    package internal(set) var actions: [BridgeAction] = []
    package internal(set) var runtimeChanged = false

    /// Counters and the latency histogram (observations only; nothing here decides).
    /// What to count, recorded; the driver counts it (`.count` actions).
    package internal(set) var metrics = CoreMetrics()
    /// The canvas relay, once it listens (nil: no canvas), and who may use it.
    package internal(set) var canvasRelay: CanvasRelayInfo?
    package internal(set) var canvasGrants = CanvasGrants()
    /// The asks' generation and the feed's next record when `.liveChanged` was last said.
    private var shown = (asks: 0, activity: 1)

    /// Which gateway the bridge links to, if any.
    package enum GatewayKind: Sendable { case lanbridge, openClaw }

    package init(
        name: String, settings: BridgeSettings, pairingTiming: PairingState.Timing, runtime: RuntimeStatus,
        initial: PairingState, pairedVersion: String, gateway kind: GatewayKind? = nil, logger: Logger,
        random: @escaping @Sendable (Int) -> [UInt8] = { SecureRandom.bytes($0) }
    ) {
        self.name = name
        self.random = random
        self.settings = settings
        self.pairingTiming = pairingTiming
        self.runtime = runtime
        self.logger = CoreLog(level: logger.logLevel)  // the logger's level only: lines leave as actions
        gate = InvokeGate(settings: settings)
        book = InvokeBook(limits: settings.limits, random: random)
        activity = ActivityFeed(capacity: settings.limits[.activityRecords])
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
        // The book's decisions are folded here, once per event, so none can be left in its buffer.
        fold()
        if runtimeChanged {
            runtimeChanged = false
            actions.append(.publishRuntime)
        }
        if book.asked.generation != shown.asks {
            shown.asks = book.asked.generation
            actions.append(.liveChanged(.asks))
        }
        if activity.nextSeq != shown.activity {
            shown.activity = activity.nextSeq
            actions.append(.liveChanged(.activity))
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

    /// Carries out what the book decided: sends, cancels, answers (to the link generation that
    /// asked only), the metrics, the timer.
    private mutating func fold() {
        for action in book.take() {
            switch action {
            case let .send(invoke, connection): send(invoke, to: connection)
            case let .cancel(cancel, connection): send(cancel, to: connection)
            case let .withdraw(invokeID, connection): actions.append(.withdraw(connection, invokeID: invokeID))
            case let .answer(target, result): answer(target, result)
            case let .finished(waiter, outcome, seconds, bytes):
                metrics.invoke(command: waiter.command, outcome: outcome, seconds: seconds)
                recordActivity(waiter, outcome: outcome, seconds: seconds, bytes: bytes)
            case let .arm(deadline): actions.append(.armTimer(deadline))
            case let .heldCount(count): metrics.held(count)
            }
        }
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

    mutating func index(_ state: PairingState) {
        paired = [:]
        rules = [:]
        for node in state.paired.nodes { index(node) }
    }

    /// The paired node with this key, from the index: per connect and per connection on every
    /// store read, so a lookup, never a scan of paired.json (a scan made a 10,000-node storm
    /// quadratic: every node's key against every node's, at each read).
    func pairedNode(withKey key: PublicKey) -> PairedNode? {
        paired[key.fingerprint].flatMap { $0.publicKey == key ? $0 : nil }
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
        book.reload(new.limits)
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
}
