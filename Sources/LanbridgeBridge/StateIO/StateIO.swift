import Foundation
import LanbridgeFiles
import LanbridgeState
import Logging
import NIOCore
import NIOPosix

/// The state directory's file I/O, off the event loop: store reads and updates (with their lock
/// and fsyncs), audit appends and runtime.json. One thread of its own carries them out in the
/// order they were asked for, so an audit entry never overtakes the change it records; results
/// come back on the caller's event loop.
final class StateIO: Sendable {
    let store: PairingStore
    let runtimeFile: RuntimeStatusFile
    private let pool: NIOThreadPool
    private let logger: Logger

    init(directory: StateDirectory, logger: Logger) {
        store = PairingStore(directory: directory)
        runtimeFile = RuntimeStatusFile(directory: directory)
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        self.logger = logger
    }

    /// Runs `work` on the I/O thread; its result comes back on `loop`.
    func run<T: Sendable>(on loop: any EventLoop, _ work: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        pool.runIfActive(eventLoop: loop, work)
    }

    /// The store as it is now, with the version of paired.json it came from (taken first, so a
    /// change that lands during the read makes the next version check read again).
    /// Push tokens of nodes no longer paired go as the store is read (`forgetUnpairedPushTokens`).
    func read(on loop: any EventLoop) -> EventLoopFuture<(version: String, state: PairingState)> {
        let io = self
        return run(on: loop) {
            let read = (io.store.pairedFileVersion(), try io.store.read())
            io.forgetUnpairedPushTokens(read.1)
            return read
        }
    }

    /// Revoked nodes' push tokens (revoked by the CLI, or while the daemon was down), and any a
    /// crash left between the token's write and its summary's.
    func forgetUnpairedPushTokens(_ state: PairingState) {
        do {
            let removed = try PushTokens(directory: store.directory).keepOnly(Set(state.paired.nodes.map(\.nodeId)))
            if removed > 0 { logger.info("removed the push tokens of \(removed) nodes no longer paired") }
        } catch {
            logger.error("cannot read \(PushTokens.fileName): \(error)")
        }
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
