import FoundationEssentials
import LanbridgeProtocol

/// Retries with the same idempotency key run the command once: a retry while it runs waits for
/// the same answer, and one within `keepFor` after gets the answer again. Large results are not
/// kept (a retry re-runs them).
///
/// Bounded by time and by bytes, per node and in all, never by a count: a busy node cannot shrink
/// another node's window, and thousands of small invokes a second keep the whole 120 s (a count of
/// 256 for everyone let a retry of `sms.send` run twice once the bridge was busy). Over a budget,
/// the oldest answers go first.
package struct IdempotencyCache {
    package typealias Answer = Result<InvokePayload, ErrorMessage>
    package typealias Key = InvokeBook.Slot

    package static let keepFor: TimeInterval = 120
    package static let maxBytesPerNode = 4 << 20
    package static let maxBytes = 32 << 20
    /// What an entry costs beyond its key and answer (the table, the queues, the digest).
    package static let entryOverhead = 160

    private enum State {
        case running([AnswerTarget])
        case done(Answer, at: Moment, serial: Int, cost: Int)
    }

    /// What the key was used for: a reuse for anything else is refused, never answered from here.
    private struct Entry {
        package var request: [UInt8]
        package var node: String
        package var state: State

        package mutating func append(waiting target: AnswerTarget) {
            guard case var .running(waiting) = state else { return }
            state = .running([])  // released before appending, so the array is not copied
            waiting.append(target)
            state = .running(waiting)
        }
    }

    /// Kept answers in the order they were kept (so, of time): every node's, and each node's.
    private struct Queue {
        package var items: [(serial: Int, key: Key)] = []
        package var head = 0
        package var isEmpty: Bool { head == items.count }
        package var count: Int { items.count - head }
        package var first: (serial: Int, key: Key)? { isEmpty ? nil : items[head] }
        package mutating func append(_ item: (serial: Int, key: Key)) { items.append(item) }
        package mutating func removeFirst() {
            head += 1
            if head == items.count { items.removeAll(keepingCapacity: true); head = 0 } else if head > 1024, head * 2 > items.count { items.removeFirst(head); head = 0 }
        }
    }

    private var entries: [Key: Entry] = [:]
    private var kept = Queue()
    private var keptByNode: [String: Queue] = [:]
    private var bytes = 0
    private var bytesByNode: [String: Int] = [:]
    private var serial = 0

    package enum Start {
        case run
        case answered(Answer)
        case wait
        /// The key was used for another request (node, command or parameters differ).
        case conflict
    }

    /// Called before running, with a digest of the request (`request`) and the node it is for;
    /// `.wait` means call `join`.
    package mutating func start(_ key: Key, request: [UInt8], node: String, now: Moment) -> Start {
        expire(now: now)
        switch entries[key] {
        case let entry? where entry.request != request:
            return .conflict
        case let entry?:
            switch entry.state {
            case let .done(answer, _, _, _): return .answered(answer)
            case .running: return .wait
            }
        case nil:
            break
        }
        entries[key] = Entry(request: request, node: node, state: .running([]))
        return .run
    }

    /// Another asker waits for the running attempt's answer; false if there is none.
    package mutating func join(_ key: Key, _ target: AnswerTarget) -> Bool {
        guard case .running? = entries[key]?.state else { return false }
        entries[key]?.append(waiting: target)
        return true
    }

    /// Records the answer; returns every retry that waited for it.
    package mutating func finish(_ key: Key, _ answer: Answer, keep: Bool, now: Moment) -> [AnswerTarget] {
        guard let entry = entries[key] else { return [] }
        let waiting: [AnswerTarget] = if case let .running(waiting) = entry.state { waiting } else { [] }
        guard keep else {
            entries[key] = nil
            return waiting
        }
        serial += 1
        // A raw payload is a slice of the node's whole message: kept on its own, so what is
        // counted is what is held.
        let answer: Answer = if case let .success(.raw(bytes)) = answer { .success(.raw(ArraySlice(Array(bytes)))) } else { answer }
        let cost = Self.entryOverhead + key.key.utf8.count + entry.request.count + Self.size(of: answer)
        entries[key]?.state = .done(answer, at: now, serial: serial, cost: cost)
        kept.append((serial, key))
        keptByNode[entry.node, default: Queue()].append((serial, key))
        bytes += cost
        bytesByNode[entry.node, default: 0] += cost
        // The node's own budget first, then everyone's; the oldest answers go.
        while bytesByNode[entry.node, default: 0] > Self.maxBytesPerNode, let oldest = keptByNode[entry.node]?.first {
            keptByNode[entry.node]?.removeFirst()
            forget(oldest)
        }
        while bytes > Self.maxBytes, let oldest = kept.first {
            kept.removeFirst()
            forget(oldest)
        }
        expire(now: now)
        return waiting
    }

    /// Answers kept longer than `keepFor` go (the queue is in time order: only its head is looked
    /// at). Called with each use and by the core's tick, so a quiet bridge lets go too.
    package mutating func expire(now: Moment) {
        while let oldest = kept.first {
            guard let entry = entries[oldest.key], case let .done(_, at, serial, _) = entry.state, serial == oldest.serial else {
                kept.removeFirst()  // forgotten already, over a budget
                continue
            }
            guard now.timeIntervalSince(at) >= Self.keepFor else { break }
            kept.removeFirst()
            forget(oldest)
        }
        // Emptied: the tables' storage goes too (Swift's collections keep their capacity when
        // emptied one by one), so a bridge whose load has passed holds nothing for it.
        if entries.isEmpty, kept.items.capacity > 0 || entries.capacity > 0 {
            (entries, kept, keptByNode, bytesByNode, bytes) = ([:], Queue(), [:], [:], 0)
        }
    }

    /// Drops the kept answer `item` names, if it is still that one. The queue of everyone's
    /// answers is cleaned at its head (so it holds at most one window); the node's queue sheds
    /// every forgotten item at its head now, or it would keep each key a busy node was ever asked
    /// with (issue 41). Answers are forgotten oldest first, by node budget, global budget or age
    /// alike, so a node's forgotten items are always at the head of its queue.
    private mutating func forget(_ item: (serial: Int, key: Key)) {
        guard let entry = entries[item.key], case let .done(_, _, serial, cost) = entry.state, serial == item.serial else { return }
        entries[item.key] = nil
        bytes -= cost
        let left = bytesByNode[entry.node, default: cost] - cost
        guard left > 0 else {
            bytesByNode[entry.node] = nil
            keptByNode[entry.node] = nil
            return
        }
        bytesByNode[entry.node] = left
        while let first = keptByNode[entry.node]?.first, !isKept(first) { keptByNode[entry.node]?.removeFirst() }
    }

    private func isKept(_ item: (serial: Int, key: Key)) -> Bool {
        guard let entry = entries[item.key], case let .done(_, _, serial, _) = entry.state else { return false }
        return serial == item.serial
    }

    /// Bytes of kept answers, as the budgets count them.
    package var bytesKept: Int { bytes }

    /// What the cache holds, for the tests of its bounds.
    package struct Footprint: Equatable {
        package var entries = 0
        /// Items in the queue of everyone's answers.
        package var queued = 0
        /// Items in the longest node queue, and in all node queues.
        package var queuedByNode = 0
        package var queuedByNodeTotal = 0
        package var nodes = 0
        package var bytes = 0
        package var bytesByNode = 0
    }

    package var footprint: Footprint {
        Footprint(
            entries: entries.count, queued: kept.count, queuedByNode: keptByNode.values.map(\.count).max() ?? 0,
            queuedByNodeTotal: keptByNode.values.reduce(0) { $0 + $1.count }, nodes: keptByNode.count,
            bytes: bytes, bytesByNode: bytesByNode.values.reduce(0, +))
    }

    private static func size(of answer: Answer) -> Int {
        switch answer {
        case let .success(.raw(bytes)): bytes.count
        case .success(.value): 256
        case let .failure(error): error.message.utf8.count + 256
        }
    }
}
