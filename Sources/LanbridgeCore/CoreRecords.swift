import Logging

/// What the core wants logged, recorded as it decides and handed to the driver as an action
/// (issue 39: no logger in the machine). The calls read as swift-log's, so a decision and its log
/// line stay side by side. Arguments are plain values, not autoclosures: a closure reading the
/// core while the core's log is being written would be an overlapping access.
package struct CoreLog {
    package struct Record: Sendable {
        package let level: Logger.Level
        package let message: Logger.Message
        package let metadata: Logger.Metadata?
    }

    /// The driver's logger's level, read once: the only thing of the logger the core keeps.
    package var level: Logger.Level
    package private(set) var records: [Record] = []

    package init(level: Logger.Level) { self.level = level }

    package mutating func record(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata?) {
        guard level >= self.level else { return }
        records.append(Record(level: level, message: message, metadata: metadata))
    }

    package mutating func debug(_ message: Logger.Message, metadata: Logger.Metadata? = nil) { record(.debug, message, metadata) }
    package mutating func info(_ message: Logger.Message, metadata: Logger.Metadata? = nil) { record(.info, message, metadata) }
    package mutating func notice(_ message: Logger.Message, metadata: Logger.Metadata? = nil) { record(.notice, message, metadata) }
    package mutating func warning(_ message: Logger.Message, metadata: Logger.Metadata? = nil) { record(.warning, message, metadata) }
    package mutating func error(_ message: Logger.Message, metadata: Logger.Metadata? = nil) { record(.error, message, metadata) }

    /// What was recorded since the last call.
    package mutating func take() -> [Record] {
        var out: [Record] = []
        swap(&out, &records)
        return out
    }
}

/// What the core counts, recorded as it decides; the driver feeds the metrics with it.
package enum CoreMetric: Sendable, Equatable {
    case held(Int)
    case relayed(bytes: Int, toGateway: Bool)
    case resultDropped(String)
    case invoke(command: String, outcome: String, seconds: Double)
}

/// The calls read as `BridgeMetrics`'s.
package struct CoreMetrics {
    package private(set) var records: [CoreMetric] = []
    package mutating func held(_ count: Int) { records.append(.held(count)) }
    package mutating func relayed(bytes: Int, toGateway: Bool) { records.append(.relayed(bytes: bytes, toGateway: toGateway)) }
    package mutating func resultDropped(_ reason: String) { records.append(.resultDropped(reason)) }
    package mutating func invoke(command: String, outcome: String, seconds: Double) { records.append(.invoke(command: command, outcome: outcome, seconds: seconds)) }

    package mutating func take() -> [CoreMetric] {
        var out: [CoreMetric] = []
        swap(&out, &records)
        return out
    }
}
