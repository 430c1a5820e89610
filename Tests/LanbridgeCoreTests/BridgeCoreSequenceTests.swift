import Foundation
import LanbridgeCore
import LanbridgeProtocol
@testable import LanbridgeCoreWalk
import TestSupport
import Testing

/// Issue 39: random sequences of events through the core on a fake clock, its promises checked
/// after every step (`CoreWalk`, which Fuzz/'s `core` target walks with libFuzzer's bytes).
/// Seeded (SplitMix), so a failure names its seed and replays; CI runs the seeds below,
/// `LANBRIDGE_CORE_SEQUENCES=N` runs N more.
struct BridgeCoreSequenceTests {
    static let seeds: [UInt64] =
        Array(1...40) + (ProcessInfo.processInfo.environment["LANBRIDGE_CORE_SEQUENCES"].flatMap(Int.init).map { n in (0..<UInt64(n)).map { 1000 + $0 } } ?? [])

    struct Seeded: CoreWalk.Choices {
        var rng: SplitMix
        mutating func next(below bound: Int) -> Int? { Int.random(in: 0..<bound, using: &rng) }
    }

    @Test(arguments: seeds)
    func randomEventsKeepTheCoresPromises(seed: UInt64) throws {
        var walk = try CoreWalk()
        var choices = Seeded(rng: SplitMix(state: seed))
        walk.walk(&choices, steps: 300)
        #expect(walk.problems.isEmpty, "seed \(seed): \(walk.problems.prefix(5))")
    }

    /// The walk finds a broken promise: an answer nobody asked for, and a second answer.
    @Test func theWalkCatchesAnUnaskedAndASecondAnswer() throws {
        let answer = BridgeAction.answer(.control(99), .failure(.init(code: "X", message: "x")))
        var unasked = try CoreWalk()
        unasked.take([answer], step: "nobody asked")
        #expect(unasked.problems == ["nobody asked: an answer nobody asked for: c99"])
        var twice = try CoreWalk()
        twice.asked["c99"] = (.control(99), 0)
        twice.take([answer], step: "first")
        #expect(twice.problems.isEmpty)
        twice.take([answer], step: "second")
        #expect(twice.problems == ["second: c99 answered 2 times"])
    }

    /// Issue 52: the walks reach the ask rule (they approve asked invokes), and the walk catches a
    /// `camera.snap` sent under its ask rule with no approval.
    @Test func theWalksAskTheOperatorAndCatchAnUnapprovedSend() throws {
        var approvals = 0
        for seed in Self.seeds.prefix(40) {
            var walk = try CoreWalk()
            var choices = Seeded(rng: SplitMix(state: seed))
            walk.walk(&choices, steps: 300)
            approvals += walk.approvals
        }
        #expect(approvals > 0, "no walk approved an asked invoke")
        var broken = try CoreWalk()
        broken.askRule = true
        broken.open.insert(1)
        broken.take([.send(1, Invoke(id: "i1", command: "camera.snap"))], step: "unapproved")
        #expect(broken.problems.first?.contains("sent 1 times under its ask rule, approved 0") == true, "\(broken.problems)")
    }
}
