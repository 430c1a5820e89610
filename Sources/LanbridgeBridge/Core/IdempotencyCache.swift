import Foundation
import LanbridgeProtocol

/// Retries with the same idempotency key run the command once: a retry while it runs waits for
/// the same answer, and one shortly after gets the answer again. Large results are not kept
/// (a retry re-runs them), so the cache stays small.
struct IdempotencyCache {
    typealias Answer = Result<InvokePayload, ErrorMessage>

    static let keepFor: TimeInterval = 120
    static let maxEntries = 256

    private enum State {
        case running([AnswerTarget])
        case done(Answer, at: Moment)
    }

    /// What the key was used for: a reuse for anything else is refused, never answered from here.
    private struct Entry {
        var request: [UInt8]
        var state: State
    }

    private var entries: [String: Entry] = [:]

    enum Start {
        case run
        case answered(Answer)
        case wait
        /// The key was used for another request (node, command or parameters differ).
        case conflict
    }

    /// Called before running, with a digest of the request (`request`); `.wait` means call `join`.
    mutating func start(_ key: String, request: [UInt8], now: Moment) -> Start {
        switch entries[key] {
        case let entry? where entry.request != request:
            if case let .done(_, at) = entry.state, now.timeIntervalSince(at) >= Self.keepFor { break }
            return .conflict
        case let entry?:
            switch entry.state {
            case let .done(answer, at) where now.timeIntervalSince(at) < Self.keepFor: return .answered(answer)
            case .running: return .wait
            case .done: break
            }
        case nil:
            break
        }
        entries[key] = Entry(request: request, state: .running([]))
        return .run
    }

    /// Another asker waits for the running attempt's answer; false if there is none.
    mutating func join(_ key: String, _ target: AnswerTarget) -> Bool {
        guard case var .running(waiting)? = entries[key]?.state else { return false }
        waiting.append(target)
        entries[key]?.state = .running(waiting)
        return true
    }

    /// Records the answer; returns every retry that waited for it.
    mutating func finish(_ key: String, _ answer: Answer, keep: Bool, now: Moment) -> [AnswerTarget] {
        guard let entry = entries[key] else { return [] }
        let waiting: [AnswerTarget] = if case let .running(waiting) = entry.state { waiting } else { [] }
        defer { trim(now: now) }
        entries[key] = keep ? Entry(request: entry.request, state: .done(answer, at: now)) : nil
        return waiting
    }

    /// Past `maxEntries`, expired answers go, then the oldest, down to three quarters: amortised
    /// O(log n) an invoke, not a pass over the table each time.
    private mutating func trim(now: Moment) {
        guard entries.count > Self.maxEntries else { return }
        entries = entries.filter { if case let .done(_, at) = $0.value.state { now.timeIntervalSince(at) < Self.keepFor } else { true } }
        guard entries.count > Self.maxEntries * 3 / 4 else { return }
        let done = entries.compactMap { key, entry -> (String, Moment)? in if case let .done(_, at) = entry.state { (key, at) } else { nil } }
        for (key, _) in done.sorted(by: { $0.1 < $1.1 }).prefix(entries.count - Self.maxEntries * 3 / 4) { entries[key] = nil }
    }
}
