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

/// A store that cannot be read (an I/O error, a journal that cannot be redone) is read again by
/// itself, on the state directory's schedule: not only when inotify happens to see a change.
extension BridgeCoreTests {
    static func probes(_ actions: [BridgeAction]) -> [Bool] {
        actions.compactMap { if case let .probeState(read) = $0 { read } else { nil } }
    }

    @Test func aStoreThatCannotBeReadIsReadAgainEveryIntervalUntilItCanBe() throws {
        var core = try core()
        let interval = StateWrites.probeInterval
        struct InputOutput: Error {}
        core.on(.storeUnreadable(InputOutput()), now: t0, wall: wall)
        #expect(Self.probes(core.on(.tick, now: t0 + (interval - 0.1), wall: wall)).isEmpty, "not before an interval")
        #expect(Self.probes(core.on(.tick, now: t0 + interval, wall: wall)) == [true], "a look, and a read")
        #expect(Self.probes(core.on(.tick, now: t0 + (interval + 1), wall: wall)).isEmpty, "one look at a time")
        // The look came back and the read failed again: an interval from then.
        core.on(.stateProbed(problem: nil), now: t0 + 6, wall: wall)
        core.on(.storeUnreadable(InputOutput()), now: t0 + 6, wall: wall)
        #expect(Self.probes(core.on(.tick, now: t0 + (6 + interval - 0.1), wall: wall)).isEmpty)
        #expect(Self.probes(core.on(.tick, now: t0 + (6 + interval), wall: wall)) == [true])
        // This time it reads: nothing more is looked at.
        core.on(.stateProbed(problem: nil), now: t0 + 12, wall: wall)
        core.on(.storeChanged(core.lastState, version: "v2"), now: t0 + 12, wall: wall)
        #expect(core.storeReadable)
        #expect(Self.probes(core.on(.tick, now: t0 + 100, wall: wall)).isEmpty)
    }
}
