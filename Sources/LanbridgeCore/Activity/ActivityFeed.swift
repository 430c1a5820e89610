import FoundationEssentials
import LanbridgeState
import LanbridgeProtocol

/// What the agent did with each device (issue 52 §3): one record per invoke that went through the
/// bridge, whatever its outcome, in a bounded ring. Never params or payloads: the command, who
/// asked, the outcome and its size and duration only. Read by `lanbridge activity` over the control
/// socket (`activity.list`).
package struct ActivityFeed: Sendable {
    package struct Record: Sendable, Equatable, Codable {
        /// Increases by one per record for the daemon's life: `--follow` asks for what came after.
        package let seq: Int
        package let time: Date
        /// The node's ID, and its name at the time (nil: no paired node had that name or ID).
        package let nodeId: String?
        package let name: String?
        package let command: String
        /// "gateway", "operator" (the CLI) or "openclaw" (a node's own socket at OpenClaw's gateway).
        package let asker: String
        /// "ok", or the error code the asker heard.
        package let outcome: String
        package let durationMs: Int
        package let resultBytes: Int
        /// Why: the rule that denied it, or who answered its ask and how (never params).
        package var note: String? = nil
    }

    package let capacity: Int
    private var ring: [Record] = []
    private var head = 0
    package private(set) var nextSeq = 1

    /// 0: the feed is off (`limits.activityRecords: 0`); nothing is kept, records are still numbered.
    package init(capacity: Int) { self.capacity = max(0, capacity) }

    package mutating func append(
        time: Date, nodeId: String?, name: String?, command: String, asker: String, outcome: String, durationMs: Int, resultBytes: Int,
        note: String? = nil
    ) {
        let record = Record(
            seq: nextSeq, time: time, nodeId: nodeId, name: name, command: command, asker: asker, outcome: outcome,
            durationMs: durationMs, resultBytes: resultBytes, note: note)
        nextSeq += 1
        if capacity == 0 { return }
        if ring.count < capacity {
            ring.append(record)
        } else {
            // Full: the oldest goes (a feed that refused new records would hide what matters now).
            ring[head] = record
            head = (head + 1) % capacity
        }
    }

    /// Oldest first: records after `since`, of `node` (ID or name) and matching `command`, the
    /// newest `limit` of them.
    package func records(since: Int = 0, node: String? = nil, command: CommandPattern? = nil, limit: Int = Int.max) -> [Record] {
        let ordered = isFull ? Array(ring[head...] + ring[..<head]) : ring
        let wanted = ordered.filter { record in
            record.seq > since
                && (node.map { record.nodeId == $0 || record.name.map(NameSkeleton.of) == NameSkeleton.of($0) } ?? true)
                && (command.map { $0.matches(record.command) } ?? true)
        }
        return Array(wanted.suffix(limit))
    }

    package var count: Int { ring.count }
    /// The ring has wrapped: `head` is the oldest (never true for a feed that is off).
    private var isFull: Bool { capacity > 0 && ring.count == capacity }

    /// Per node, how many invokes the ring holds from the last hour and the last day, and how
    /// many of those did not end "ok" (`activity --counts`). `coversDay` is false when the ring
    /// has overflowed within the day: the day's figures are then lower bounds.
    package struct Counts: Sendable, Equatable, Codable {
        package var nodeId: String
        package var name: String?
        package var lastHour = 0, lastDay = 0, notOkLastDay = 0

        package init(nodeId: String, name: String?, lastHour: Int = 0, lastDay: Int = 0, notOkLastDay: Int = 0) {
            (self.nodeId, self.name, self.lastHour, self.lastDay, self.notOkLastDay) = (nodeId, name, lastHour, lastDay, notOkLastDay)
        }
    }

    package func counts(at now: Date) -> (nodes: [Counts], coversDay: Bool) {
        var byNode: [String: Counts] = [:]
        let hour = now.addingTimeInterval(-3600), day = now.addingTimeInterval(-86_400)
        for record in ring where record.time > day {
            let key = record.nodeId ?? "-"
            var counts = byNode[key] ?? Counts(nodeId: key, name: record.name)
            counts.lastDay += 1
            if record.time > hour { counts.lastHour += 1 }
            if record.outcome != "ok" { counts.notOkLastDay += 1 }
            counts.name = record.name ?? counts.name
            byNode[key] = counts
        }
        let oldest = isFull ? ring[head].time : nil
        return (byNode.values.sorted { ($0.lastDay, $1.nodeId) > ($1.lastDay, $0.nodeId) }, oldest.map { $0 <= day } ?? true)
    }
}
