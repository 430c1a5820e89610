import FoundationEssentials
import Glibc
import LanbridgeProtocol
import Logging

/// swift-log output for daemons: aligned and readable on a terminal, one `key=value` line per event
/// otherwise (journald, files), so `grep` and log shippers get whole events.
public struct LineLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let interactive: Bool
    /// Under journald: each line starts with its syslog priority (`<4>`), so `journalctl -p warning`
    /// works, and carries no timestamp of its own (the journal has one).
    private let journal: Bool

    public init(label: String, level: Logger.Level = .info, interactive: Bool = isatty(STDERR_FILENO) == 1, journal: Bool = Self.stderrIsJournal()) {
        self.label = label
        logLevel = level
        self.interactive = interactive && !journal
        self.journal = journal
    }

    /// systemd sets JOURNAL_STREAM to the device and inode of the stream it connected; it counts
    /// only if stderr is still that stream (not redirected by a script in between).
    public static func stderrIsJournal() -> Bool {
        guard let value = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return value == "\(info.st_dev):\(info.st_ino)"
    }

    /// sd-daemon(3) priorities.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        StandardStream.writeLine(line(for: event, time: Date()))
    }

    /// The local time of day, `HH:MM:SS`, for a person watching a terminal.
    static func localClock(_ time: Date) -> String {
        var seconds = time_t(time.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec))"
    }

    /// The event as one line. Every value a peer may have chosen (the message and each field) is
    /// escaped here, in one place: no control character, newline or terminal sequence reaches the
    /// log raw, so a value can neither start a line of its own nor drive a terminal.
    func line(for event: LogEvent, time: Date) -> String {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }
        if interactive {
            let clock = Self.localClock(time)
            let extra = fields.isEmpty ? "" : "  " + fields.map { "\(SafeText.escape($0.key))=\(SafeText.escape("\($0.value)"))" }.joined(separator: " ")
            return "\(clock) \(event.level.rawValue.uppercased().padded(to: 7)) \(SafeText.escape("\(event.message)"))\(extra)"
        }
        let head = journal ? ["<\(Self.priority(event.level))>level=\(event.level)"] : ["ts=\(ISO8601Text.string(time))", "level=\(event.level)"]
        return
            (head + ["logger=\(label)", "msg=\(SafeText.quote("\(event.message)"))"]
            + fields.map { "\(SafeText.escape($0.key))=\(SafeText.quote("\($0.value)"))" }).joined(separator: " ")
    }
}
