import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import LanbridgeBridge

/// Issue 62 §1: the parts the driver carries with, each alone on an `EmbeddedEventLoop`.
struct DriverPartsTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    // MARK: - DriverReplies

    @Test func repliesGoToTheirTokenOnceAndAStopAnswersWhatIsLeft() throws {
        let loop = EmbeddedEventLoop()
        var replies = DriverReplies()
        let first = loop.makePromise(of: InvokeAnswer.self), second = loop.makePromise(of: InvokeAnswer.self)
        let a = replies.awaitControl(first, client: 1), b = replies.awaitControl(second, client: 2)
        #expect(a != b)
        #expect(replies.tokens(of: 1) == [a] && replies.tokens(of: 3).isEmpty)
        replies.answerControl(a, .success(.value(["n": 1])))
        replies.answerControl(a, .success(.value(["n": 2])))  // a second answer to the token goes nowhere
        #expect(try first.futureResult.wait().get() == .value(["n": 1]))
        #expect(replies.tokens(of: 1).isEmpty)
        replies.stop()
        guard case let .failure(error) = try second.futureResult.wait() else { Issue.record("not failed"); return }
        #expect(error.code == ErrorMessage.unavailable)
    }

    // MARK: - DriverChannels

    @Test func writesAreFlushedOncePerTurnOfTheLoopAndAClosedChannelIsForgotten() throws {
        let loop = EmbeddedEventLoop()
        let admission = Admission(limits: .init(), logger: logger)
        let channels = DriverChannels(loop: loop, admission: admission, descriptors: nil)
        let channel = EmbeddedChannel(loop: loop)
        guard case let .admit(slot, _, _) = admission.connection(from: "10.0.0.5", close: {}) else {
            Issue.record("not admitted")
            return
        }
        let id = channels.accepted(channel, slot: slot, ticket: nil)
        #expect(channels.established(id) == slot)
        #expect(channels.stillOpen(id, slot: slot).open)
        channels.send(NodeOutbound(bytes: [1], invokeID: nil), to: id)
        channels.send(NodeOutbound(bytes: [2], invokeID: nil), to: id)
        #expect(try channel.readOutbound(as: NodeOutbound.self) == nil, "written, not yet flushed")
        loop.run()
        #expect(try channel.readOutbound(as: NodeOutbound.self)?.bytes == [1])
        #expect(try channel.readOutbound(as: NodeOutbound.self)?.bytes == [2])
        channels.closed(id)
        #expect(!channels.stillOpen(id, slot: nil).open)
        channels.send(NodeOutbound(bytes: [3], invokeID: nil), to: id)  // to a closed connection: dropped
        loop.run()
        #expect(try channel.readOutbound(as: NodeOutbound.self) == nil)
    }

    // MARK: - RuntimePublisher

    @Test func runtimeJsonIsWrittenAtOnceThenAtMostOncePerIntervalWithTheLatestStatus() {
        let loop = EmbeddedEventLoop()
        var written: [String] = []
        let publisher = RuntimePublisher(loop: loop) { written.append($0.bridgeName) }
        var name = "one"
        let status = { RuntimeStatus(bridgeName: name, listening: [], startedAt: .init(timeIntervalSince1970: 0)) }
        publisher.publishSoon(connections: 0, status: status)
        #expect(written == ["one"], "after a quiet spell: at once")
        name = "two"
        publisher.publishSoon(connections: 0, status: status)
        name = "three"
        publisher.publishSoon(connections: 0, status: status)
        #expect(written == ["one"], "a burst waits for the interval")
        loop.advanceTime(by: .milliseconds(60))
        #expect(written == ["one", "three"], "once, with the latest status")
        publisher.stop()
        publisher.publishSoon(connections: 0, status: status)
        loop.advanceTime(by: .seconds(1))
        #expect(written == ["one", "three"], "nothing after a stop")
    }

    // MARK: - LoopWatch

    @Test func theHeapIsTrimmedWhenWhatIsHeldShrankToAQuarterOfABigPeakAtMostOnceAMinute() {
        let loop = EmbeddedEventLoop()
        var trims = 0
        let watch = LoopWatch(loop: loop, metrics: .disabled, logger: logger) { trims += 1 }
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
        #expect(!watch.trimIfShrunk(held: 4 << 20, now: t0), "a small peak is not worth a trim")
        #expect(!watch.trimIfShrunk(held: 16 << 20, now: t0))
        #expect(!watch.trimIfShrunk(held: 5 << 20, now: t0), "not yet a quarter")
        #expect(watch.trimIfShrunk(held: 3 << 20, now: t0))
        #expect(!watch.trimIfShrunk(held: 16 << 20, now: t0 + .seconds(10)))
        #expect(!watch.trimIfShrunk(held: 1 << 20, now: t0 + .seconds(30)), "at most once a minute")
        #expect(watch.trimIfShrunk(held: 1 << 20, now: t0 + .seconds(61)))
        #expect(trims == 2)
    }

    @Test func theLongestEventSinceTheLastCheckIsNamed() {
        let loop = EmbeddedEventLoop()
        // A fake clock each event moves on by its own length: the test holds no timing of the machine's.
        var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let watch = LoopWatch(loop: loop, metrics: .disabled, logger: logger, clock: { now }) {}
        watch.timed("quick") { now = now + .milliseconds(1) }
        watch.timed("slow") { now = now + .milliseconds(50) }
        watch.timed("quick again") { now = now + .milliseconds(2) }
        #expect(watch.longest.what == "slow")
    }
}
