#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point on the monotonic clock, for every deadline, bucket and lockout: it never jumps when
/// the system clock is set. Wall time (`Date`) is only for what people read and what is stored.
///
/// The API mirrors `Date`'s (`addingTimeInterval`, `timeIntervalSince`), and tests build moments
/// from plain seconds, so logic that takes `now` runs under a fake clock.
public struct Moment: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds on CLOCK_MONOTONIC, the clock NIO's `NIODeadline` counts on too.
    public let nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// A moment `seconds` after an arbitrary origin (tests and fake clocks).
    public init(seconds: Double) { nanoseconds = Int64((seconds * 1e9).rounded()) }

    /// Seconds since the clock's origin (what `init(seconds:)` takes).
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public static var now: Moment {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Moment(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    /// Earlier than any moment the clock gives.
    public static let distantPast = Moment(nanoseconds: Int64.min / 4)

    public func addingTimeInterval(_ seconds: Double) -> Moment {
        Moment(nanoseconds: nanoseconds &+ Int64((seconds * 1e9).rounded()))
    }

    /// The moment `milliseconds` later: the config's and the wire's durations are whole
    /// milliseconds (one conversion, not `Double(ms) / 1000` at each use).
    public func adding(milliseconds: Int) -> Moment {
        Moment(nanoseconds: nanoseconds &+ Int64(milliseconds) &* 1_000_000)
    }

    /// Seconds from `other` to this moment (negative if `other` is later).
    public func timeIntervalSince(_ other: Moment) -> Double {
        Double(nanoseconds &- other.nanoseconds) / 1e9
    }

    public static func + (moment: Moment, seconds: Double) -> Moment { moment.addingTimeInterval(seconds) }

    public static func < (a: Moment, b: Moment) -> Bool { a.nanoseconds < b.nanoseconds }

    public var description: String { "t+\(Double(nanoseconds) / 1e9)s" }
}
