import FoundationEssentials
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// At most `limit` holders at once; the rest wait in order. A waiter whose task is cancelled
/// leaves the queue at once, holding nothing.
actor ConnectSlots {
    private var free: Int
    private var waiting: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextWaiter = 0

    init(_ limit: Int) { free = limit }

    /// True when a slot is held (release it); false when the task was cancelled first.
    func acquire() async -> Bool {
        guard !Task.isCancelled else { return false }
        if free > 0 { free -= 1; return true }
        nextWaiter += 1
        let id = nextWaiter
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiting.append((id, $0)) }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().continuation.resume(returning: true) }
    }

    private func cancel(_ id: Int) {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return }  // already given a slot
        waiting.remove(at: index).continuation.resume(returning: false)
    }

    var waitingCount: Int { waiting.count }
}
