import Foundation
import LanbridgeProtocol

/// Retries with the same idempotency key run the command once: a retry while it runs waits for
/// the same answer, and one shortly after gets the answer again. Large results are not kept
/// (a retry re-runs them), so the cache stays small.
struct IdempotencyCache {
    typealias Answer = Result<InvokePayload, ErrorMessage>

    static let keepFor: TimeInterval = 120
    static let maxEntries = 256

    private enum Entry {
        case running([CheckedContinuation<Answer, Never>])
        case done(Answer, at: Date)
    }

    private var entries: [String: Entry] = [:]

    enum Start {
        case run
        case answered(Answer)
        case wait
    }

    /// Called before running; `.wait` means call `join` and await.
    mutating func start(_ key: String, now: Date) -> Start {
        switch entries[key] {
        case let .done(answer, at) where now.timeIntervalSince(at) < Self.keepFor:
            return .answered(answer)
        case .running:
            return .wait
        default:
            entries[key] = .running([])
            return .run
        }
    }

    mutating func join(_ key: String, _ continuation: CheckedContinuation<Answer, Never>) {
        guard case var .running(waiting) = entries[key] else { return continuation.resume(returning: .failure(
            ErrorMessage(code: ErrorMessage.unavailable, message: "the first attempt vanished", retryable: true))) }
        waiting.append(continuation)
        entries[key] = .running(waiting)
    }

    /// Records the answer and hands it to every retry that waited.
    mutating func finish(_ key: String, _ answer: Answer, keep: Bool, now: Date) {
        if case let .running(waiting) = entries[key] { waiting.forEach { $0.resume(returning: answer) } }
        entries[key] = keep ? .done(answer, at: now) : nil
        if entries.count > Self.maxEntries {
            entries = entries.filter { if case let .done(_, at) = $0.value { now.timeIntervalSince(at) < Self.keepFor } else { true } }
        }
        while entries.count > Self.maxEntries, let old = entries.first(where: { if case .done = $0.value { true } else { false } })?.key {
            entries[old] = nil
        }
    }
}
