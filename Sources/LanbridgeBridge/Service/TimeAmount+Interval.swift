import FoundationEssentials
import NIOCore

extension TimeAmount {
    /// The core's durations are seconds (`TimeInterval`); NIO's timers take this, to the millisecond.
    static func interval(_ interval: TimeInterval) -> TimeAmount { .milliseconds(Int64((interval * 1000).rounded())) }
}
