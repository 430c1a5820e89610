import Foundation
@testable import LanbridgeCore
@testable import LanbridgeProtocol
import Testing

/// The idempotency cache holds one window of answers and nothing more, whatever the traffic
/// (issue 41: a node never idle for a whole window kept every key it was ever asked with).
@Suite struct IdempotencyCacheTests {
    let t0 = Moment(seconds: 1000)
    static let answer: IdempotencyCache.Answer = .success(.raw(ArraySlice(Array("{\"ok\":true}".utf8))))

    /// One keyed invoke run to its answer.
    func run(_ cache: inout IdempotencyCache, key: String, node: String, at now: Moment) {
        guard case .run = cache.start(.init(.gateway, key), request: Array(key.utf8), node: node, now: now) else {
            Issue.record("a fresh key should run")
            return
        }
        _ = cache.finish(.init(.gateway, key), Self.answer, keep: true, now: now)
    }

    @Test func aNodeInvokedWithoutPauseKeepsOneWindowOfItems() {
        var cache = IdempotencyCache()
        let perSecond = 20
        let window = Int(IdempotencyCache.keepFor)
        var peak = IdempotencyCache.Footprint()
        // Twenty windows: two nodes asked 20 times a second each, never idle.
        for second in 0..<(20 * window) {
            for n in 0..<perSecond {
                let now = t0 + Double(second) + Double(n) / Double(perSecond)
                run(&cache, key: "a-\(second)-\(n)", node: "node-a", at: now)
                run(&cache, key: "b-\(second)-\(n)", node: "node-b", at: now)
            }
            let footprint = cache.footprint
            peak.entries = max(peak.entries, footprint.entries)
            peak.queued = max(peak.queued, footprint.queued)
            peak.queuedByNode = max(peak.queuedByNode, footprint.queuedByNode)
        }
        let oneWindow = (window + 1) * perSecond
        #expect(peak.entries <= 2 * oneWindow, "answers kept: \(peak.entries)")
        #expect(peak.queued <= 2 * oneWindow, "the queue of everyone's answers: \(peak.queued)")
        #expect(peak.queuedByNode <= oneWindow, "one node's queue: \(peak.queuedByNode) items (one window is \(oneWindow))")
    }

    @Test func everythingGoesWhenTheWindowPasses() {
        var cache = IdempotencyCache()
        for n in 0..<500 { run(&cache, key: "k\(n)", node: "node-\(n % 7)", at: t0 + Double(n) / 10) }
        // One more invoke a window after the last: everything before it has expired.
        run(&cache, key: "last", node: "node-0", at: t0 + 50 + IdempotencyCache.keepFor + 1)
        let footprint = cache.footprint
        #expect(
            footprint.entries == 1 && footprint.queued == 1 && footprint.queuedByNode == 1 && footprint.nodes == 1,
            "\(footprint)")
        #expect(footprint.bytes == footprint.bytesByNode, "the byte counts agree")
    }

    @Test func aQuietCacheLetsGoOnExpiry() {
        var cache = IdempotencyCache()
        for n in 0..<100 { run(&cache, key: "k\(n)", node: "node-\(n % 3)", at: t0) }
        cache.expire(now: t0 + IdempotencyCache.keepFor)
        #expect(cache.footprint == IdempotencyCache.Footprint(), "nothing is held once the window has passed")
    }

    /// `count` answers of `size` bytes, keyed `prefix0`…, for the nodes `node(n)` names, 10 ms apart.
    func fill(_ cache: inout IdempotencyCache, count: Int, size: Int, prefix: String = "k", node: (Int) -> String) {
        let big: IdempotencyCache.Answer = .success(.raw(ArraySlice(repeating: UInt8(ascii: "x"), count: size)))
        for n in 0..<count {
            _ = cache.start(.init(.gateway, "\(prefix)\(n)"), request: [], node: node(n), now: t0 + Double(n) / 100)
            _ = cache.finish(.init(.gateway, "\(prefix)\(n)"), big, keep: true, now: t0 + Double(n) / 100)
        }
    }

    @Test func aNodeOverItsBudgetLosesItsOldestAndItsQueueShrinksWithIt() {
        var cache = IdempotencyCache()
        fill(&cache, count: 200, size: 64 << 10, prefix: "big") { _ in "node-a" }
        let footprint = cache.footprint
        #expect(footprint.bytesByNode <= IdempotencyCache.maxBytesPerNode)
        #expect(footprint.queuedByNode == footprint.entries, "the node's queue holds only what is kept: \(footprint)")
        // The oldest went; the newest is still answered.
        guard case .answered = cache.start(.init(.gateway, "big199"), request: [], node: "node-a", now: t0 + 3) else {
            Issue.record("the newest answer should still be kept")
            return
        }
        guard case .run = cache.start(.init(.gateway, "big0"), request: [], node: "node-a", now: t0 + 3) else {
            Issue.record("the oldest answer should have gone over the node's budget")
            return
        }
    }

    @Test func theGlobalBudgetEvictsAcrossNodesAndTheirQueuesFollow() {
        var cache = IdempotencyCache()
        // 16 nodes × 12 answers of 256 KiB = 48 MiB offered against a 32 MiB budget.
        fill(&cache, count: 192, size: 256 << 10) { "node-\($0 % 16)" }
        let footprint = cache.footprint
        #expect(footprint.bytes <= IdempotencyCache.maxBytes)
        #expect(footprint.queuedByNodeTotal == footprint.entries, "node queues hold only kept answers: \(footprint)")
    }
}
