import LanbridgeState
import NIOCore

/// When runtime.json is written, confined to the driver's loop: at once after a quiet spell, and
/// under a burst at most every 50 ms, or 50 µs per connection when there are more than a thousand
/// (with the latest status). One change shows as soon as it happens, and a thousand nodes
/// reconnecting cost a few writes, not a thousand. Each write is linear in the nodes, so a fixed
/// interval made a 10,000-node storm spend a third of its CPU writing the file (issue 53 §4); now
/// its cost per node stays flat (RuntimePublishingTests).
final class RuntimePublisher {
    private let loop: any EventLoop
    private let write: (RuntimeStatus) -> Void
    /// runtime.json changed since it was last written (the write is due or scheduled).
    private var due = false
    private var lastWrite: NIODeadline?
    private var stopped = false

    /// `write` writes the file (off the loop: `StateIO.publish`).
    init(loop: any EventLoop, write: @escaping (RuntimeStatus) -> Void) { (self.loop, self.write) = (loop, write) }

    static func interval(connections: Int) -> TimeAmount {
        max(.milliseconds(50), .microseconds(Int64(connections) * 50))
    }

    /// The status changed; `status` gives it as it is when the write comes.
    func publishSoon(connections: Int, status: @escaping () -> RuntimeStatus) {
        guard !stopped, !due else { return }
        due = true
        guard let lastWrite, case let deadline = lastWrite + Self.interval(connections: connections), deadline > loop.now else {
            return writeDue(status)
        }
        loop.scheduleTask(deadline: deadline) { [self] in writeDue(status) }
    }

    /// Written by the caller now (the first status, which "lanbridge listening" waits for): what
    /// was due is in it.
    func writtenNow() {
        due = false
        lastWrite = loop.now
    }

    func stop() {
        stopped = true
        due = false
    }

    private func writeDue(_ status: () -> RuntimeStatus) {
        guard due, !stopped else { return }
        due = false
        lastWrite = loop.now
        write(status())
    }
}
