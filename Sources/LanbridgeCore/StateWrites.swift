import FoundationEssentials
import LanbridgeProtocol

/// Whether the state directory takes writes, as the daemon learns it (issue 61 §1): a store write
/// that fails marks it unwritable (a read-only remount, a full disk, an immutable file); from then
/// on it is probed every `probeInterval` until it takes writes again. Meanwhile paired nodes keep
/// working from what is in memory, and every write fails with its reason. A store that cannot be
/// read is looked at (and read) again on the same schedule.
package struct StateWrites: Sendable, Equatable {
    /// How often an unwritable state directory is looked at again.
    package static let probeInterval: TimeInterval = 5

    /// When writes began to fail (wall clock, for people), and why.
    package private(set) var failingSince: Date?
    package private(set) var problem: String?
    private var nextProbe = Moment.distantPast
    private var probing = false

    package init() {}

    /// "read-only file system since 2026-11-29T07:40:00Z", while writes fail.
    package var summary: String? {
        guard let failingSince, let problem else { return nil }
        return "\(problem) since \(ISO8601Text.string(failingSince))"
    }

    /// A store write failed: true when that is news (the first failure since writes worked).
    package mutating func failed(_ reason: String, now: Moment, wall: Date) -> Bool {
        guard failingSince == nil else { return false }
        (failingSince, problem, nextProbe) = (wall, reason, now + Self.probeInterval)
        return true
    }

    /// A read of the store failed: the next look is an interval away.
    package mutating func readFailed(now: Moment) { nextProbe = now + Self.probeInterval }

    /// Whether to look again now, while writes fail or the store cannot be read (`unreadable`):
    /// once per interval, one look at a time.
    package mutating func probeDue(now: Moment, unreadable: Bool = false) -> Bool {
        guard failingSince != nil || unreadable, !probing, now >= nextProbe else { return false }
        probing = true
        return true
    }

    /// The look's answer: true when writes work again (they had failed).
    package mutating func probed(_ found: String?, now: Moment) -> Bool {
        probing = false
        nextProbe = now + Self.probeInterval
        guard failingSince != nil else { return false }
        if let found {
            problem = found
            return false
        }
        (failingSince, problem) = (nil, nil)
        return true
    }
}
