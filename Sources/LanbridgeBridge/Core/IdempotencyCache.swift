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
        case running([CheckedContinuation<Answer, Never>])
        case done(Answer, at: Date)
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

    /// Called before running, with a digest of the request (`request`); `.wait` means call `join`
    /// and await.
    mutating func start(_ key: String, request: [UInt8], now: Date) -> Start {
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

    mutating func join(_ key: String, _ continuation: CheckedContinuation<Answer, Never>) {
        guard case var .running(waiting)? = entries[key]?.state else { return continuation.resume(returning: .failure(
            ErrorMessage(code: ErrorMessage.unavailable, message: "the first attempt vanished", retryable: true))) }
        waiting.append(continuation)
        entries[key]?.state = .running(waiting)
    }

    /// Records the answer and hands it to every retry that waited.
    mutating func finish(_ key: String, _ answer: Answer, keep: Bool, now: Date) {
        guard let entry = entries[key] else { return }
        if case let .running(waiting) = entry.state { waiting.forEach { $0.resume(returning: answer) } }
        entries[key] = keep ? Entry(request: entry.request, state: .done(answer, at: now)) : nil
        if entries.count > Self.maxEntries {
            entries = entries.filter { if case let .done(_, at) = $0.value.state { now.timeIntervalSince(at) < Self.keepFor } else { true } }
        }
        while entries.count > Self.maxEntries, let old = entries.first(where: { if case .done = $0.value.state { true } else { false } })?.key {
            entries[old] = nil
        }
    }
}
