import LanbridgeProtocol
import Logging
import NIOCore

/// The driver loop's health, confined to it: every event is timed, so a stall names the longest
/// one; the loop's lag is a gauge; and the heap is trimmed once what the bridge holds has shrunk
/// (LoopWatchTests).
final class LoopWatch {
    static let lagInterval = TimeAmount.milliseconds(250)

    private let loop: any EventLoop
    private let metrics: BridgeMetrics
    private let logger: Logger
    private let trim: () -> Void
    /// The monotonic clock events are timed by (tests give their own).
    private let clock: () -> NIODeadline
    /// The longest event since the last lag check, and what it was.
    private(set) var longest: (nanoseconds: UInt64, what: String) = (0, "")
    private var lastStallLog = NIODeadline.distantPast
    /// What the bridge holds for peers at its peak since the heap was last trimmed.
    private var heldPeak = 0
    private var lastTrim = NIODeadline.distantPast

    /// `trim` gives freed heap back to the system (off the loop: `StateIO.trimHeap`).
    init(loop: any EventLoop, metrics: BridgeMetrics, logger: Logger, clock: @escaping () -> NIODeadline = { .now() }, trim: @escaping () -> Void) {
        (self.loop, self.metrics, self.logger, self.clock, self.trim) = (loop, metrics, logger, clock, trim)
    }

    /// Runs one event, timing it: no single event may hold the relay loop for long, and when one
    /// does, the log says which (`what` is made only for the longest).
    func timed(_ what: @autoclosure () -> String, _ event: () -> Void) {
        let start = clock()
        event()
        let took = (clock() - start).nanoseconds
        if took > longest.nanoseconds { longest = (UInt64(took), what()) }
    }

    /// Every 250 ms, until `stopped`: how late this check itself ran (the loop's lag, a gauge in
    /// the metrics); a lag over a second is logged (at most once a minute), naming the longest
    /// event since the last check.
    func watchLag(from expected: NIODeadline, stopped: @escaping () -> Bool) {
        let now = NIODeadline.now()
        let lag = max(0, Double((now - expected).nanoseconds) / 1e9)
        metrics.loopLag(seconds: lag)
        if lag > 1, now - lastStallLog > .seconds(60) {
            lastStallLog = now
            logger.warning(
                "the relay loop was held for \(NumberText.fixed(lag)) s; the longest event was \(longest.what) (\(NumberText.fixed(Double(longest.nanoseconds) / 1e9)) s)")
        }
        longest = (0, "")
        guard !stopped() else { return }
        let next = now + Self.lagInterval
        loop.scheduleTask(deadline: next) { [self] in watchLag(from: next, stopped: stopped) }
    }

    /// glibc keeps freed pages for reuse: once what the bridge holds (`held` bytes: kept answers,
    /// about 16 KiB a connection) has shrunk to a quarter of a peak of 8 MiB or more (the nodes
    /// left, the idempotency window passed), the heap is trimmed, at most once a minute, so the
    /// memory goes back to the system (issue 41). True when it was.
    @discardableResult
    func trimIfShrunk(held: Int, now: NIODeadline = .now()) -> Bool {
        heldPeak = max(heldPeak, held)
        guard heldPeak >= 8 << 20, held < heldPeak / 4, now - lastTrim >= .minutes(1) else { return false }
        (heldPeak, lastTrim) = (held, now)
        trim()
        return true
    }
}
