import FoundationEssentials
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The state directory's file I/O, off the event loop: store reads and updates (with their lock
/// and fsyncs), audit appends and runtime.json. One thread of its own carries them out in the
/// order they were asked for, so an audit entry never overtakes the change it records; results
/// come back on the caller's event loop.
final class StateIO: Sendable {
    let store: PairingStore
    /// paired.json's path, kept: the driver's version check runs before every fresh-store event.
    let pairedPath: String
    let runtimeFile: RuntimeStatusFile
    /// The files a store change writes: one of them immutable is a state that takes no writes.
    static let storeFiles = [
        PairingStore.pairedFileName, PairingStore.pendingFileName, PairingStore.invitesFileName, AuditLog.fileName, AuditLog.headFileName,
    ]
    private let pool: NIOThreadPool
    private let logger: Logger
    /// Lent to a store read or write that finds no descriptor free.
    private let reserve = DescriptorReserve()

    /// `appended`: told how many audit entries each of the daemon's own store changes wrote.
    init(directory: StateDirectory, logger: Logger, appended: (@Sendable (Int) -> Void)? = nil) {
        store = PairingStore(directory: directory, appended: appended)
        pairedPath = store.pairedURL.path
        runtimeFile = RuntimeStatusFile(directory: directory)
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        self.logger = logger
    }

    /// Runs `work` on the I/O thread; its result comes back on `loop`.
    func run<T: Sendable>(on loop: any EventLoop, _ work: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        let reserve = reserve
        return pool.runIfActive(eventLoop: loop) { try reserve.run(work) }
    }

    /// The store as it is now, with the version of paired.json it came from (taken first, so a
    /// change that lands during the read makes the next version check read again).
    /// A read that finds a node gone (revoked by the CLI) also drops its push token.
    func read(on loop: any EventLoop) -> EventLoopFuture<(version: String, state: PairingState)> {
        let io = self
        return run(on: loop) {
            let read = (io.store.pairedFileVersion(), try io.store.read())
            let paired = Set(read.1.paired.nodes.map(\.nodeId))
            let nodeLeft = io.lastPaired.withLockedValue { last in
                defer { last = paired }
                return !last.isSubset(of: paired)
            }
            if nodeLeft { io.forgetUnpairedPushTokens(paired) }
            return read
        }
    }

    /// The paired nodes at the last read: push tokens need a look only when one of them goes.
    private let lastPaired = NIOLockedValueBox<Set<Fingerprint>>([])

    /// Drops the push tokens of nodes not in `paired` (revoked now, or while the daemon was down);
    /// at start, this also sets what the next reads compare with.
    func forgetUnpairedPushTokens(_ paired: Set<Fingerprint>) {
        lastPaired.withLockedValue { $0 = paired }
        do {
            let removed = try PushTokens(directory: store.directory).keepOnly(paired)
            if removed > 0 { logger.info("removed push tokens of nodes no longer paired", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.error("cannot read \(PushTokens.fileName): \(error)")
        }
    }

    /// Gives the heap's free pages back to the system, off the event loop.
    func trimHeap() {
        pool.submit { _ in AllocatorPolicy.giveBack(ifHoldingMoreThan: 0) }
    }

    func record(_ entries: [AuditEntry], on loop: any EventLoop) {
        let (store, logger) = (store, logger)
        run(on: loop) {
            do { try store.record(entries) } catch { logger.warning("cannot write the audit log: \(error)") }
        }.whenFailure { _ in }
    }

    func publish(_ status: RuntimeStatus, on loop: any EventLoop) {
        let (file, logger) = (runtimeFile, logger)
        run(on: loop) {
            do { try file.write(status) } catch { logger.warning("cannot write \(file.url.path): \(error)") }
        }.whenFailure { _ in }
    }

    /// Waits for everything asked so far (the pool's own shutdown would cancel what is still
    /// queued, such as the last lastSeen write), then stops the thread.
    func finish(on loop: any EventLoop) async {
        try? await run(on: loop) {}.get()  // one thread, in order: a barrier
        try? await pool.shutdownGracefully()
    }
}
