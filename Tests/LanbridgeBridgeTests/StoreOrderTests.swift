import Testing
@testable import LanbridgeBridge

/// Issue 62 §1: when an event may reach the core, against reads of the store, as a value: no loop,
/// no files (the driver held these rules in five fields and three closures-taking methods).
struct StoreOrderTests {
    @Test func anEventRunsAtOnceWhenNothingWaits() {
        var order = StoreOrder<String>()
        #expect(order.inOrder("a") == .run)
        #expect(order.fresh("b", current: { true }) == .run)
        #expect(order.heldCount == 0)
    }

    @Test func aStaleStoreHoldsTheFreshEventAndEverythingAfterItUntilTheReadIsDone() {
        var order = StoreOrder<String>()
        #expect(order.fresh("open", current: { false }) == .holdAndRead)
        #expect(order.inOrder("message") == .hold, "behind the held opening, in arrival order")
        #expect(
            order.fresh(
                "operator",
                current: {
                    Issue.record("no stat while a read is under way"); return true
                }) == .hold)
        #expect(order.next() == nil, "nothing runs while the read is under way")
        #expect(order.readDone(changedSince: false) == false)
        #expect([order.next(), order.next(), order.next(), order.next()] == ["open", "message", "operator", nil])
    }

    @Test func aChangeSeenDuringAReadIsReadOnceMoreBeforeAnythingHeldRuns() {
        var order = StoreOrder<String>()
        #expect(order.readSoon() == true)
        #expect(order.inOrder("a") == .hold)
        #expect(order.readSoon() == false, "one read at a time")
        #expect(order.readDone(changedSince: false) == true, "inotify spoke during the read: read again")
        #expect(order.next() == nil)
        #expect(order.readDone(changedSince: true) == true, "the file moved on during the read: again")
        #expect(order.readDone(changedSince: false) == false)
        #expect(order.next() == "a")
    }

    @Test func afterAStopNothingWaitsForARead() {
        var order = StoreOrder<String>()
        #expect(order.fresh("open", current: { false }) == .holdAndRead)
        #expect(order.inOrder("b") == .hold)
        #expect(order.stop() == ["open", "b"], "what was held is released to run against the stopping core")
        #expect(order.readSoon() == false)
        #expect(order.fresh("late", current: { false }) == .run)
        #expect(order.readDone(changedSince: true) == false, "a read still under way at the stop is not repeated")
        #expect(order.inOrder("c") == .run)
    }
}
