import Foundation
import LanbridgeCore
import LanbridgeProtocol
import Testing

/// Issue 61 §1: a state directory that takes no writes, as the daemon learns it, on a fake clock.
struct StateWritesTests {
    let t0 = Moment(seconds: 1000)
    let wall = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aFailureIsNewsOnceAndIsLookedAtAgainEveryIntervalUntilWritesWork() {
        var writes = StateWrites()
        let idle = writes.probeDue(now: t0)
        #expect(writes.summary == nil && !idle)
        let first = writes.failed("read-only file system", now: t0, wall: wall)
        let second = writes.failed("read-only file system", now: t0 + 1, wall: wall)
        #expect(first && !second, "said once")
        #expect(writes.summary == "read-only file system since 2027-01-15T08:00:00Z")
        let early = writes.probeDue(now: t0 + (StateWrites.probeInterval - 0.1))
        let due = writes.probeDue(now: t0 + StateWrites.probeInterval)
        let again = writes.probeDue(now: t0 + (StateWrites.probeInterval + 10))
        #expect(!early && due && !again, "once an interval, one look at a time")
        // Still failing, now for another reason: shown, and looked at again an interval later.
        let stillFailing = writes.probed("no space left on device", now: t0 + 6)
        #expect(!stillFailing && writes.summary == "no space left on device since 2027-01-15T08:00:00Z")
        let tooSoon = writes.probeDue(now: t0 + (6 + StateWrites.probeInterval - 0.1))
        let next = writes.probeDue(now: t0 + (6 + StateWrites.probeInterval))
        #expect(!tooSoon && next)
        let recovered = writes.probed(nil, now: t0 + 12)
        let after = writes.probeDue(now: t0 + 100)
        #expect(recovered && writes.summary == nil && !after, "writes work again")
    }
}
