import LanbridgeProtocol
import Testing

/// Issue 39: one redial schedule for the gateway link, the OpenClaw sockets and the node SDK.
struct BackoffTests {
    @Test func waitsDoubleToTheCapWithJitterAndStartOverAfterAConnectionThatLasted() {
        var backoff = Backoff(initial: 0.25, maximum: 2, resetAfter: 10)
        var waits: [Double] = []
        for _ in 0..<6 {
            waits.append(backoff.wait(lasted: 0.1, jitter: 0.5))
            backoff.grow()
        }
        #expect(waits == [0.25, 0.5, 1, 2, 2, 2])
        #expect(backoff.failures == 6)
        // Jitter is ±20 %, never outside it.
        func near(_ a: Double, _ b: Double) -> Bool { abs(a - b) < 1e-9 }
        #expect(near(backoff.wait(lasted: 0.1, jitter: 0), 1.6) && near(backoff.wait(lasted: 0.1, jitter: 1), 2.4) && near(backoff.wait(lasted: 0.1, jitter: 7), 2.4))
        // A connection that stayed up: the next wait is the first again, and the count restarts.
        #expect(backoff.wait(lasted: 11, jitter: 0.5) == 0.25 && backoff.failures == 1)
        // A wait that did not grow (a retry at once, a fixed delay) stays where it was.
        #expect(backoff.wait(lasted: 0, jitter: 0.5) == 0.25)
    }
}
