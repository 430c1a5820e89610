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

extension OpenedState {
    /// Prepares and checks the directory, takes the daemon lock, loads the identity, watches the
    /// store and reads it (migrating an older format), and sizes the descriptor budget.
    static func open(_ configuration: BridgeConfiguration, logger: Logger) throws -> OpenedState {
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
            // Metrics, the console, and the browser door's page (its node sockets are admission's).
            http: [configuration.metrics != nil, configuration.console != nil, configuration.browser != nil].filter { $0 }.count
                * HTTPConnectionTable.Limits().total,
            canvas: configuration.canvas == nil ? 0 : configuration.settings.limits[.canvasConnections])
        let openFileLimit = OpenFileLimit.raise(toward: descriptors.needed)
        if let shortfall = descriptors.shortfall(limit: openFileLimit) { logger.warning("\(shortfall)") }
        return OpenedState(
            daemonLock: daemonLock, identity: identity, watcher: watcher, initialVersion: initialVersion, initial: initial,
            openFileLimit: openFileLimit, listenerBounds: descriptors.needed)
    }
}
