#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeProtocol

/// Which addresses a node tries, in which order, and how: the happy-eyeballs idea applied to a
/// bridge that may be on the LAN, on a tailnet, or behind a name.
///
/// Order: what mDNS found just now (the bridge is on this network), the address that worked last,
/// the addresses the app gave, then those the bridge listed in its last `welcome`. Attempts start
/// `stagger` apart, or at once when the previous one failed; the first to finish its handshake
/// with the pinned key (or the invite's fingerprint) wins and the others are closed. An address
/// never makes a bridge trusted: a key that is not the pinned one fails that attempt only.
enum BridgeDialer {
    static let stagger: Duration = .milliseconds(250)
    /// Attempts per round, at most: mDNS, last, the app's, and the bridge's four.
    static let maxCandidates = 8

    /// Without repeats, first choice first.
    static func candidates(
        discovered: [ReachableAddress], last: ReachableAddress?, configured: [ReachableAddress],
        learned: [ReachableAddress]
    ) -> [ReachableAddress] {
        var seen = Set<ReachableAddress>()
        return Array((discovered + (last.map { [$0] } ?? []) + configured + learned).filter { seen.insert($0).inserted }.prefix(maxCandidates))
    }

    /// One attempt's failure, for the reconnect log.
    struct Failure: Error, CustomStringConvertible {
        let address: ReachableAddress
        let error: any Error
        var description: String { "\(address): \(error)" }
    }

    enum RaceOutcome<T: Sendable>: Sendable { case tick(Int), done(Int, Result<T, any Error>) }

    /// Every attempt failed.
    struct AllFailed: Error, CustomStringConvertible {
        let failures: [Failure]
        var description: String {
            failures.isEmpty ? "no address to try" : failures.map(\.description).joined(separator: "; ")
        }
    }

    /// Runs `attempt` on the candidates, staggered, and returns the first success with its
    /// address. Attempts still running then are cancelled, and what they return later is handed
    /// to `discard` (so a connection that completes late is closed, not leaked).
    static func race<T: Sendable>(
        _ candidates: [ReachableAddress], stagger: Duration = stagger,
        attempt: @escaping @Sendable (ReachableAddress) async throws -> T,
        discard: @escaping @Sendable (T) -> Void
    ) async throws -> (T, ReachableAddress) {
        let (outcomes, sink) = AsyncStream.makeStream(of: RaceOutcome<T>.self)
        var tasks: [Task<T, any Error>] = []
        var timer: Task<Void, Never>?
        var failures: [Failure] = []
        func start(_ index: Int) {
            let task = Task { try await attempt(candidates[index]) }
            tasks.append(task)
            Task {
                let result = await task.result
                sink.yield(.done(index, result))
            }
            timer?.cancel()
            if index + 1 < candidates.count {
                timer = Task {
                    try? await Task.sleep(for: stagger)
                    if !Task.isCancelled { sink.yield(.tick(index + 1)) }
                }
            }
        }
        var winner: Int?
        defer {
            timer?.cancel()
            sink.finish()
            for (index, task) in tasks.enumerated() where index != winner {
                task.cancel()
                Task { if let late = try? await task.value { discard(late) } }
            }
        }
        guard !candidates.isEmpty else { throw AllFailed(failures: []) }
        start(0)
        return try await withTaskCancellationHandler {
            for await outcome in outcomes {
                switch outcome {
                case let .tick(next) where next == tasks.count:
                    start(next)
                case .tick:
                    break  // a failure already started it
                case let .done(index, .success(value)):
                    winner = index
                    return (value, candidates[index])
                case let .done(index, .failure(error)):
                    failures.append(Failure(address: candidates[index], error: error))
                    if failures.count == candidates.count { throw AllFailed(failures: failures) }
                    if tasks.count < candidates.count, index == tasks.count - 1 { start(tasks.count) }
                }
            }
            throw CancellationError()
        } onCancel: {
            sink.finish()
        }
    }
}
