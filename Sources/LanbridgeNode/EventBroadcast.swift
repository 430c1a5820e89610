#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import NIOConcurrencyHelpers

/// Hands every event to every current subscriber. Each subscriber's buffer is bounded: a consumer
/// that falls behind loses its oldest events, never anyone else's, and never blocks the client.
final class EventBroadcast<Event: Sendable>: @unchecked Sendable {
    private let lock = NIOLock()
    private var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
    private var next: UInt64 = 0
    private let bufferSize: Int

    init(bufferSize: Int) { self.bufferSize = bufferSize }

    func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(bufferSize))
        let id = lock.withLock { () -> UInt64 in
            next += 1
            subscribers[next] = continuation
            return next
        }
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.subscribers.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ event: Event) {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.yield(event) }
    }

    var subscriberCount: Int { lock.withLock { subscribers.count } }

    func finish() {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.finish() }
    }
}
