import Foundation
import Logging

/// swift-log output for daemons: aligned and readable on a terminal, one `key=value` line per event
/// otherwise (journald, files), so `grep` and log shippers get whole events.
public struct LineLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let interactive: Bool

    public init(label: String, level: Logger.Level = .info, interactive: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        logLevel = level
        self.interactive = interactive
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }
        let line: String
        if interactive {
            let time = Date().formatted(.dateTime.hour(.twoDigits(amPM: .omitted)).minute(.twoDigits).second(.twoDigits))
            let extra = fields.isEmpty ? "" : "  " + fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = "\(time) \(event.level.rawValue.uppercased().padding(toLength: 7, withPad: " ", startingAt: 0)) \(event.message)\(extra)"
        } else {
            let time = Date().formatted(.iso8601)
            line = (["ts=\(time)", "level=\(event.level)", "logger=\(label)", "msg=\(Self.quote("\(event.message)"))"]
                + fields.map { "\($0.key)=\(Self.quote("\($0.value)"))" }).joined(separator: " ")
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private static func quote(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty
            ? "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            : value
    }
}
