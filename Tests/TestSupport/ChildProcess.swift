import Foundation

/// A real child process with its stdout read line by line, for end-to-end tests.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    private let stdout = Pipe()
    private let stderr = Pipe()
    private let stdin = Pipe()
    private let condition = NSCondition()
    private var lines: [String] = []
    /// Every stdout line so far, read or not.
    private var transcript: [String] = []
    private var stdoutClosed = false
    private var errorText = ""
    private var stderrClosed = false

    /// The directory holding this build's products (executables sit beside the test bundle).
    public static let productsDirectory: URL = {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
            .deletingLastPathComponent()
    }()

    public static func product(_ name: String) -> URL { productsDirectory.appendingPathComponent(name) }

    /// Runs a command with its output discarded and returns its exit status (nil if it cannot start).
    public static func exitStatus(_ executable: String, _ arguments: [String]) -> Int32? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// With `mergeStandardError`, stderr lines arrive through `nextLine` too (daemons log there).
    /// With `standardInput`, the test can write to the process (`write(line:)`).
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        mergeStandardError: Bool = false, standardInput: Bool = false
    ) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = stdout
        process.standardError = mergeStandardError ? stdout : stderr
        process.standardInput = standardInput ? stdin : FileHandle.nullDevice
        if mergeStandardError { stderrClosed = true }
        try process.run()
        let out = stdout.fileHandleForReading, err = stderr.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = out.availableData
                condition.lock()
                if chunk.isEmpty {
                    if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)); transcript.append(lines[lines.count - 1]) }
                    stdoutClosed = true
                    condition.broadcast()
                    condition.unlock()
                    return
                }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    transcript.append(lines[lines.count - 1])
                    pending.removeSubrange(pending.startIndex...newline)
                }
                condition.broadcast()
                condition.unlock()
            }
        }
        if mergeStandardError { return }
        Thread.detachNewThread { [self] in
            let data = err.readDataToEndOfFile()
            condition.lock()
            errorText = String(decoding: data, as: UTF8.self)
            stderrClosed = true
            condition.broadcast()
            condition.unlock()
        }
    }

    public var pid: Int32 { process.processIdentifier }

    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    /// The next stdout line; nil at end of output. Throws if nothing arrives within `timeout`
    /// (a guard against hangs, not a timing assertion).
    public func nextLine(timeout: TimeInterval = 60) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.isEmpty && !stdoutClosed {
            guard condition.wait(until: deadline) else { throw Timeout(description: "no output from \(process.executableURL!.lastPathComponent) in \(timeout) s") }
        }
        return lines.isEmpty ? nil : lines.removeFirst()
    }

    /// Every stdout line so far, whether a wait has read it or not.
    public var output: [String] {
        condition.lock()
        defer { condition.unlock() }
        return transcript
    }

    /// Reads lines until one satisfies `predicate`.
    public func waitForLine(timeout: TimeInterval = 60, where predicate: (String) -> Bool) throws -> String {
        while let line = try nextLine(timeout: timeout) {
            if predicate(line) { return line }
        }
        throw Timeout(description: "\(process.executableURL!.lastPathComponent) exited without the expected line; stderr: \(standardError)")
    }

    /// Reads lines until one satisfies `predicate`, all within `seconds` (a hang guard for a
    /// process that keeps talking: `waitForLine(timeout:)` bounds each line only).
    public func waitForLine(within seconds: TimeInterval, where predicate: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Timeout(description: "\(process.executableURL!.lastPathComponent): no such line within \(seconds) s") }
            guard let line = try nextLine(timeout: left) else {
                throw Timeout(description: "\(process.executableURL!.lastPathComponent) exited without the expected line; stderr: \(standardError)")
            }
            if predicate(line) { return line }
        }
    }

    /// Everything the process wrote to stderr. Once it has exited, this waits for the pipe to
    /// drain (bounded), so a message written just before exit is never missed.
    public var standardError: String {
        condition.lock()
        defer { condition.unlock() }
        if !process.isRunning {
            let deadline = Date().addingTimeInterval(10)
            while !stderrClosed, condition.wait(until: deadline) {}
        }
        return errorText
    }

    /// SIGKILLs and reaps the process if it still runs (a safety net for failed tests).
    public func killIfRunning() {
        guard process.isRunning else { return }
        signal(SIGKILL)
        _ = wait()
    }

    public func write(line: String) {
        stdin.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Ends the process's standard input (EOF).
    public func closeStandardInput() {
        try? stdin.fileHandleForWriting.close()
    }

    /// Signals the process while it runs (never a reaped PID that may belong to someone else now).
    public func signal(_ signal: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
    }

    /// Waits for exit and returns the status (a signal number shows as `terminationReason == .uncaughtSignal`).
    @discardableResult
    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
