@testable import LanbridgeBridge
@testable import LanbridgeCore
import Testing

struct ConnectSlotsTests {
    /// Issue 21: a node that left while its OpenClaw dial waited for a handshake slot kept
    /// waiting (the wait ignored cancellation), then dialled anyway and took over the socket of
    /// the node's newer link. A cancelled wait now leaves the queue at once, holding nothing.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledWaitForASlotEndsAtOnceAndHoldsNothing() async {
        let slots = ConnectSlots(1)
        #expect(await slots.acquire())
        let waiter = Task { await slots.acquire() }
        while await slots.waitingCount == 0 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value == false, "the cancelled wait gave up without a slot")
        await slots.release()
        #expect(await slots.acquire(), "the one slot is free again: the cancelled waiter took none")
    }
}
