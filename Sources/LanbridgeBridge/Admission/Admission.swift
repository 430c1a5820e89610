import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import Logging
import NIOConcurrencyHelpers

/// The admission policy behind a lock, shared by the accept path (NIO threads) and the bridge
/// actor. It closes the connections the policy evicts or finds overdue, and keeps the log readable
/// under a flood: the first refusal of each kind in a minute is logged with its address, the rest
/// are counted into one summary line a minute.
final class Admission: Sendable {
    typealias Slot = AdmissionPolicy.Slot
    typealias Close = @Sendable () -> Void

    private struct State {
        var policy: AdmissionPolicy
        var closers: [Slot: Close] = [:]
        var refused: [String: Int] = [:]
        var evicted = 0
        var summaryStarted = Moment.now
    }
    private let state: NIOLockedValueBox<State>
    private let logger: Logger
    private let metrics: BridgeMetrics

    init(limits: AdmissionPolicy.Limits, metrics: BridgeMetrics = .disabled, logger: Logger) {
        state = NIOLockedValueBox(State(policy: AdmissionPolicy(limits: limits)))
        (self.metrics, self.logger) = (metrics, logger)
    }

    /// A new connection from `address`; `close` closes it, should it be evicted or overdue.
    func connection(from address: String, listener: Int = 0, close: @escaping Close) -> AdmissionPolicy.Decision {
        let (decision, evicted, firstOfKind) = state.withLockedValue { state -> (AdmissionPolicy.Decision, [Close], Bool) in
            let decision = state.policy.connection(from: address, listener: listener, now: Moment.now)
            switch decision {
            case let .admit(slot, evicting, _):
                state.closers[slot] = close
                state.evicted += evicting.count
                return (decision, evicting.compactMap { state.closers.removeValue(forKey: $0) }, false)
            case let .refuse(refusal):
                state.refused[refusal.kind, default: 0] += 1
                return (decision, [], state.refused[refusal.kind] == 1)
            }
        }
        if case let .refuse(refusal) = decision {
            metrics.admissionRefused(refusal.kind)
            if firstOfKind { logger.notice("refused connection: \(refusal) (further refusals are counted into a summary a minute)") }
        }
        for close in evicted {
            metrics.admissionRefused("evicted")
            close()
        }
        return decision
    }

    /// The connection waits for the operator now.
    func waiting(_ slot: Slot?) {
        guard let slot else { return }
        let evicted = state.withLockedValue { state in
            state.policy.waiting(slot).compactMap { state.closers.removeValue(forKey: $0) }
        }
        evicted.forEach { $0() }
    }

    /// Proved a paired key, or closed.
    func release(_ slot: Slot?) {
        guard let slot else { return }
        state.withLockedValue { state in
            state.policy.release(slot)
            state.closers[slot] = nil
        }
    }

    /// Once a second: closes connections past their deadline, forgets stale addresses, and once a
    /// minute logs what was refused.
    func tick(now: Moment) {
        let (overdue, summary) = state.withLockedValue { state -> ([Close], String?) in
            let overdue = state.policy.overdue(now: now).compactMap { state.closers.removeValue(forKey: $0) }
            guard now.timeIntervalSince(state.summaryStarted) >= 60 else { return (overdue, nil) }
            state.policy.prune(now: now)
            var parts = state.refused.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            if state.evicted > 0 { parts.append("\(state.evicted) unauthenticated connections evicted to make room") }
            (state.refused, state.evicted, state.summaryStarted) = ([:], 0, now)
            return (overdue, parts.isEmpty ? nil : parts.joined(separator: ", "))
        }
        if !overdue.isEmpty { logger.info("closed \(overdue.count) unpaired connection(s) that neither paired nor asked to in time") }
        for close in overdue {
            metrics.admissionRefused("overdue")
            close()
        }
        if let summary { logger.notice("admission in the last minute: \(summary)") }
    }
}
