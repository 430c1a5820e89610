import NIOCore
import Testing
@testable import LanbridgeBridge

/// Issue 53 §4: runtime.json is linear in the connected nodes, so how often a burst rewrites it
/// grows with them (a fixed 50 ms made a 10,000-node reconnect storm spend a third of its CPU on
/// the file): the cost per node of keeping it current stays flat.
struct RuntimePublishingTests {
    @Test func theFileIsRewrittenLessOftenAsTheFleetGrows() {
        #expect(RuntimePublisher.interval(connections: 0) == .milliseconds(50))
        #expect(RuntimePublisher.interval(connections: 1000) == .milliseconds(50), "a thousand nodes: as before")
        #expect(RuntimePublisher.interval(connections: 10_000) == .milliseconds(500))
        // What a write costs per second stays proportional to nothing but the interval's own floor.
        let perSecond = [2000, 10_000, 50_000].map { n in Double(n) / (Double(RuntimePublisher.interval(connections: n).nanoseconds) / 1e9) }
        #expect(Set(perSecond).count == 1, "\(perSecond)")
    }
}
