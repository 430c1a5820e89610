import FoundationEssentials
import LanbridgeProtocol

/// Counts events per key over a sliding window, in bounded memory. The keys are chosen by peers
/// (addresses, keys), so the table forgets: a key whose events have all left the window is
/// dropped when the table is next pruned, and past `maxKeys` the key touched longest ago goes.
public struct WindowCounter<Key: Hashable & Sendable>: Sendable {
    public let window: TimeInterval
    public let maxKeys: Int
    private var events: [Key: [Moment]] = [:]

    public init(window: TimeInterval, maxKeys: Int = 4096) {
        (self.window, self.maxKeys) = (window, maxKeys)
    }

    /// Events of `key` within the window before `now`.
    public func count(_ key: Key, now: Moment) -> Int {
        events[key]?.count { now.timeIntervalSince($0) < window } ?? 0
    }

    /// Records one event and returns how many `key` has in the window, this one included. Only the
    /// latest `keep` are remembered per key (enough to compare with a limit).
    @discardableResult
    public mutating func record(_ key: Key, now: Moment, keep: Int = 64) -> Int {
        var recent = (events[key] ?? []).filter { now.timeIntervalSince($0) < window }
        recent.append(now)
        if recent.count > keep { recent.removeFirst(recent.count - keep) }
        events[key] = recent
        if events.count > maxKeys { prune(now: now) }
        return recent.count
    }

    public mutating func forget(_ key: Key) { events[key] = nil }

    /// Drops keys with nothing in the window; if still over `maxKeys`, the least recently touched,
    /// down to three quarters of it, so that a flood of new keys costs O(log n) each, amortised.
    public mutating func prune(now: Moment) {
        events = events.filter { $0.value.last.map { now.timeIntervalSince($0) < window } ?? false }
        guard events.count > maxKeys else { return }
        let byAge = events.sorted { ($0.value.last ?? .distantPast) < ($1.value.last ?? .distantPast) }
        for (key, _) in byAge.prefix(events.count - maxKeys * 3 / 4) { events[key] = nil }
    }

    public var keys: Int { events.count }
}
