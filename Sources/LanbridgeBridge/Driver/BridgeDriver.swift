import FoundationEssentials
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import LanbridgeTransport
import Logging
import NIOCore
import NIOPosix

/// Runs the `BridgeCore` on one event loop and carries out what it decides: it only carries.
/// Every event reaches the core through `submit` (or `submitAndWait`), in its turn against reads
/// of the store (`StoreOrder`), timed (`LoopWatch`); the actions go out in `perform`
/// (BridgeDriver+Actions) to the parts beside it, each confined to the loop and tested alone:
/// `DriverChannels` (the nodes' and the link's channels, flushed once per turn), `DriverReplies`
/// (answers owed by token), `RuntimePublisher` (runtime.json's pace). The only work that leaves
/// the loop is file I/O (`StateIO`), whose results come back as events.
///
/// Everything here is confined to `loop`; methods that may be called from elsewhere say so and hop.
final class BridgeDriver: NodeSessionDriver, @unchecked Sendable {
    let loop: any EventLoop
    private var core: BridgeCore
    let io: StateIO
    let invites: InviteCache
    let logger: Logger
    let metrics: BridgeMetrics
    let wakeHook: WakeHook
    /// The certificate both TLS doors serve, when either is on.
    let doorTLS: DoorTLS?
    let channels: DriverChannels
    var replies = DriverReplies()
    /// What waits for a read of the store; `order.stopped` once the bridge stops.
    private var order = StoreOrder<() -> Void>()
    let runtime: RuntimePublisher
    let watch: LoopWatch
    /// What the driver calls out to beyond the core (`attach`).
    var outlets = DriverOutlets()
    var timer: Scheduled<Void>?

    /// One descriptor budget for every listener (nil in tests that build a driver alone).
    var descriptors: DescriptorGate? { channels.descriptors }

    init(
        loop: any EventLoop, core: BridgeCore, io: StateIO, admission: Admission, invites: InviteCache, metrics: BridgeMetrics = .disabled,
        doorTLS: DoorTLS? = nil, descriptors: DescriptorGate? = nil, logger: Logger
    ) {
        (self.loop, self.core, self.io, self.invites, self.metrics, self.logger, self.doorTLS) = (loop, core, io, invites, metrics, logger, doorTLS)
        wakeHook = WakeHook(directory: io.store.directory, logger: logger, metrics: metrics)
        channels = DriverChannels(loop: loop, admission: admission, descriptors: descriptors)
        runtime = RuntimePublisher(loop: loop) { [io, loop] status in io.publish(status, on: loop) }
        watch = LoopWatch(loop: loop, metrics: metrics, logger: logger) { [io] in io.trimHeap() }
    }

    /// Hands the driver what it calls out to (any thread; returns once it holds it).
    func attach(_ change: @escaping @Sendable (inout DriverOutlets) -> Void) async {
        try? await loop.submit { [self] in change(&outlets) }.get()
    }

    // MARK: - Nodes (called on the loop by `NodeSessionHandler`)

    /// A new channel, before its handshake (on the loop): its connection ID. `app`: one of
    /// OpenClaw's apps, whose channel runs on the app door's thread.
    func accepted(_ channel: any Channel, slot: Admission.Slot, ticket: DescriptorGate.Ticket? = nil, app: Bool = false, browser: BrowserTier? = nil) -> ConnectionID {
        channels.accepted(channel, slot: slot, ticket: ticket, app: app, browser: browser)
    }

    func established(_ id: ConnectionID, _ handshake: SecureSession.HandshakeResult, address: String, peer: String) {
        let slot = channels.established(id)
        submit(order: .freshStore) { [self] in
            let (open, local) = channels.stillOpen(id, slot: slot)
            return open ? .opened(.init(id: id, handshake: handshake, address: address, peer: peer, slot: slot, local: local, browser: channels.browser(id))) : nil
        }
    }

    /// One of OpenClaw's apps proved its device at the front door (issue 38): from here on it is a
    /// connection like a node's, keyed by a hash of its device key, with no Noise underneath.
    /// From the app door's thread: this hops to the loop.
    func appEstablished(_ id: ConnectionID, _ device: OpenClawAppSession.Device, tlsSha256: String?, address: String, peer: String) {
        guard loop.inEventLoop else { return loop.execute { [self] in appEstablished(id, device, tlsSha256: tlsSha256, address: address, peer: peer) } }
        let slot = channels.established(id)
        let key = OpenClawAppClaim.nodeKey(ed25519: device.publicKey)
        let claim = OpenClawAppClaim(deviceId: device.deviceId, publicKey: Base64URL.encode(device.publicKey), clientId: device.clientId, tlsSha256: tlsSha256)
        // A stand-in for a handshake: the key, and a hash no other session shares.
        let handshake = SecureSession.HandshakeResult(remoteStaticKey: key.bytes, handshakeHash: SecureRandom.bytes(32), version: 1, handshake: .xx)
        submit(order: .freshStore) { [self] in
            let (open, local) = channels.stillOpen(id, slot: slot)
            guard open else { return nil }
            return .opened(.init(id: id, handshake: handshake, address: address, peer: peer, slot: slot, local: local, app: (claim, device.details, device.bootstrapToken)))
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

    /// A channel closed (from any loop: an app's channel is on its door's).
    func closed(_ id: ConnectionID) {
        guard loop.inEventLoop else { return loop.execute { [self] in closed(id) } }
        channels.closed(id)
        submit(.closed(id))
    }

    // MARK: - The store (any thread: these hop)

    /// inotify saw the CLI (or the bridge) replace a store file.
    func storeMayHaveChanged() {
        loop.execute { [self] in readStoreSoon() }
    }

    /// Reads the store now, or once more after the read under way (on the loop).
    func readStoreSoon() {
        if order.readSoon() { readStore() }
    }

    private func readStore() {
        io.read(on: loop).whenComplete { [self] result in
            switch result {
            case let .success((version, state)): run(.storeChanged(state, version: version))
            case let .failure(error): run(.storeUnreadable(error))
            }
            // Changed again during the read: read again before anything held runs.
            let store = core.store
            if order.readDone(changedSince: store.readable && io.store.pairedFileVersion() != store.version) { return readStore() }
            while let event = order.next() { event() }
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

    /// Every event for the core comes in here, from any thread (it hops to the loop).
    func submit(_ event: BridgeEvent, order: Order = .inOrder) {
        submit(order: order) { event }
    }

    /// The event made when its turn comes (nil: nothing to decide any more, such as a connection
    /// that closed while its opening waited for the store).
    func submit(order when: Order, _ make: @escaping () -> BridgeEvent?) {
        enqueue(when) { [self] in if let event = make() { run(event) } }
    }

    /// `submit`, returning once the core has decided the event and its actions are carried out
    /// (a reload is never said done before it is true).
    func submitAndWait(_ event: BridgeEvent, order: Order = .now) async {
        let promise = loop.makePromise(of: Void.self)
        enqueue(order) { [self] in
            run(event)
            promise.succeed(())
        }
        try? await promise.futureResult.get()
    }

    private func enqueue(_ when: Order, _ turn: @escaping () -> Void) {
        guard loop.inEventLoop else { return loop.execute { [self] in enqueue(when, turn) } }
        switch when {
        case .now: turn()
        case .inOrder: if order.inOrder(turn) == .run { turn() }
        case .freshStore:
            switch order.fresh(turn, current: { PairingStore.version(ofFile: io.pairedPath) == core.store.version }) {
            case .run: turn()
            case .hold: break
            case .holdAndRead: readStore()
            }
        }
    }

    /// One event for the core, timed (one that holds the loop long is named in the stall log),
    /// its actions carried out.
    private func run(_ event: BridgeEvent) {
        watch.timed(Self.label(event)) { decide(event) }
    }

    private func decide(_ event: BridgeEvent) {
        perform(core.handle(event, now: .now, wall: Date()))
    }

    // MARK: - What the core shows (on the loop)

    var store: BridgeCore.StoreView { core.store }
    var load: BridgeCore.Load { core.load }
    var health: BridgeCore.Health { core.health }
    func runtimeFile() -> RuntimeStatus { core.runtimeFile() }

    var stopped: Bool { order.stopped }

    /// The bridge stops: no read of the store comes any more; what waited for one is returned, to run.
    func stop() -> [() -> Void] {
        runtime.stop()
        timer?.cancel()
        return order.stop()
    }
}
