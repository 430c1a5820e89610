import LanbridgeCore
import LanbridgeProtocol
import Testing

/// Issue 62 §5: a node's calls waiting for its OpenClaw socket, as a value on a fake clock (they
/// were a list of entries each with a timer of its own, inside the links' class).
struct WaitingEventsTests {
    let t0 = Moment(seconds: 1000)

    @Test func atMostTheLimitWaitAndTheRestAreRefused() {
        var waiting = WaitingEvents(limit: 2, wait: 5)
        let added = [
            waiting.add("agent", payload: ["n": 1], tag: "a", now: t0), waiting.add("agent", payload: ["n": 2], tag: "b", now: t0 + 1),
            waiting.add("agent", payload: ["n": 3], tag: "c", now: t0 + 2),
        ]
        #expect(added == [true, true, false], "the third is refused")
        #expect(waiting.count == 2)
    }

    @Test func eachWaitsItsTimeOldestFirstAndOneDeadlineIsArmed() {
        var waiting = WaitingEvents(limit: 8, wait: 5)
        _ = waiting.add("agent", payload: .null, tag: "a", now: t0)
        _ = waiting.add("voice", payload: .null, tag: "b", now: t0 + 2)
        #expect(waiting.nextDeadline == t0 + 5)
        let early = waiting.expire(now: t0 + 4.9)
        #expect(early.isEmpty)
        let first = waiting.expire(now: t0 + 5)
        #expect(first.map(\.tag) == ["a"])
        #expect(waiting.nextDeadline == t0 + 7)
        let second = waiting.expire(now: t0 + 100)
        #expect(second.map(\.tag) == ["b"])
        #expect(waiting.nextDeadline == nil && waiting.count == 0)
    }

    @Test func theSocketUpSendsEverythingInOrderAndRoomComesBack() {
        var waiting = WaitingEvents(limit: 2, wait: 5)
        _ = waiting.add("agent", payload: ["n": 1], tag: "a", now: t0)
        _ = waiting.add("system-event", payload: ["n": 2], tag: nil, now: t0)
        let sent = waiting.takeAll()
        #expect(sent.map(\.payload) == [["n": 1], ["n": 2]])
        #expect(waiting.count == 0 && waiting.nextDeadline == nil)
        let again = waiting.add("agent", payload: .null, tag: "c", now: t0 + 1)
        #expect(again)
    }
}
