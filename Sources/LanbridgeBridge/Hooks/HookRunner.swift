import Dispatch
import FoundationEssentials
import Glibc
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOConcurrencyHelpers

/// Runs an operator's hook (`wake`, `notify`) off the relay loop: one JSON document on stdin, an
/// allow-listed environment, no inherited descriptors, killed with its process group past its
/// timeout. Its exit and first line of output are logged, a secret it was given blanked out.
final class HookRunner: Sendable {
    /// Runs of this hook under way at once; past it a run is skipped and counted.
    static let maxRunning = 4
    /// What a hook sees of the daemon's environment.
    static let environment = ["PATH", "LANG", "LC_ALL", "TZ", "HOME"]
    static let maxOutputLine = 200

    /// "wake hook", "notify hook": how the log names it.
    let name: String
    private let logger: Logger
    /// Counts each run's outcome: ok, failed, timeout, error, skipped.
    private let count: @Sendable (String) -> Void
    private let running = NIOLockedValueBox(0)

    init(name: String, logger: Logger, count: @escaping @Sendable (String) -> Void) {
        (self.name, self.logger, self.count) = (name, logger, count)
        // A hook that exits without reading its input must not take the daemon with it (the
        // write to its stdin would raise SIGPIPE); sockets already ignore it per call.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Starts `body` (which calls `execute`) on its own thread; returns at once.
    func start(_ meta: Logger.Metadata, _ body: @escaping @Sendable () -> Void) {
        let admitted = running.withLockedValue { count -> Bool in
            guard count < Self.maxRunning else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.warning("\(name) not run: \(Self.maxRunning) runs already under way", metadata: meta)
            return count("skipped")
        }
        let started = DetachedThread.start { [self] in
            defer { running.withLockedValue { $0 -= 1 } }
            body()
        }
        if !started {
            running.withLockedValue { $0 -= 1 }
            logger.error("\(name) not run: the system gave no thread for it", metadata: meta)
            count("error")
        }
    }

    /// Runs `hook` with `input` on its stdin, and waits for it (on the thread `start` gave).
    /// `since`: when what it reports on happened, for its latency.
    func execute(_ hook: BridgeSettings.Hook, input: [UInt8], hiding secret: String?, meta: Logger.Metadata, since: Moment) {
        guard let exec = hook.exec else { return }
        var meta = meta
        let inherited = ProcessInfo.processInfo.environment
        let environment = Dictionary(uniqueKeysWithValues: Self.environment.compactMap { key in inherited[key].map { (key, $0) } })
        let process: HookProcess
        do throws(HookProcess.SpawnError) { process = try HookProcess.spawn(exec, arguments: hook.args, environment: environment) } catch {
            logger.error("\(name) could not start: \(error)", metadata: meta)
            return count("error")
        }
        meta["latencyMs"] = "\(Int(Moment.now.timeIntervalSince(since) * 1000))"
        logger.info("\(name) started", metadata: meta)

        // A late hook is killed with its group, but never once it is reaped (its PID may be
        // someone else's by then): the lock orders the kill against the reaping.
        enum Run { case running, timedOut, reaped }
        let run = NIOLockedValueBox(Run.running)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(hook.timeoutMs)) {
            run.withLockedValue { state in
                guard state == .running else { return }
                state = .timedOut
                process.killGroup()
            }
        }
        process.send(input)
        var output = FirstLine()
        // Past the kill, a second more for the output to end, then it is not waited for.
        let outputDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(hook.timeoutMs + 1000) * 1_000_000
        process.readOutput(until: outputDeadline) { output.append($0) }
        var timedOut = false
        let termination = process.wait {
            run.withLockedValue { state in
                timedOut = state == .timedOut
                state = .reaped
            }
        }

        meta["ms"] = "\(Int(Moment.now.timeIntervalSince(since) * 1000))"
        meta["output"] = "\(output.text(hiding: secret))"
        if timedOut {
            logger.warning("\(name) timed out after \(hook.timeoutMs) ms", metadata: meta)
            count("timeout")
        } else if termination == .exited(0) {
            logger.info("\(name) ran", metadata: meta.merging(["exit": "0"]) { $1 })
            count("ok")
        } else {
            let how =
                switch termination {
                case let .exited(code): "exit \(code)";
                case let .signalled(signal): "signal \(signal)"
                }
            logger.warning("\(name) failed: \(how)", metadata: meta)
            count("failed")
        }
    }

    /// The first line of a hook's output, for the log: printable, at most `maxOutputLine`
    /// characters, the token replaced if it shows. The rest is read and dropped, so the hook never
    /// blocks on a full pipe.
    struct FirstLine {
        private var kept: [UInt8] = []
        private var done = false

        mutating func append(_ chunk: UnsafeRawBufferPointer) {
            guard !done else { return }
            for byte in chunk {
                if byte == UInt8(ascii: "\n") || kept.count >= 4096 { done = true; return }
                kept.append(byte)
            }
        }

        func text(hiding secret: String?) -> String {
            var line = String(decoding: kept, as: UTF8.self)
            if let secret, !secret.isEmpty { line = Self.redact(secret, in: line) }
            line = String(String.UnicodeScalarView(line.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
            return line.count > HookRunner.maxOutputLine ? String(line.prefix(HookRunner.maxOutputLine)) + "…" : line
        }

        /// Shortest piece of a secret that is hidden: shorter runs are too likely to be words.
        static let minimumPiece = 6

        /// Hides the secret by structure, not by exact match (issue 36: a token holding `"` or `\`
        /// showed escaped, and a long one its first characters): the line is cut into runs at
        /// every character a token is not made of; a run of six or more characters that is
        /// part of the secret, in a form a hook may print it (as is, JSON-escaped, percent-encoded,
        /// base64, base64url, hex), or that holds one, is hidden, together with the neighbouring
        /// runs and separators that continue the same form. What is hidden becomes `[token]`.
        static func redact(_ secret: String, in line: String) -> String {
            let bytes = Array(secret.utf8)
            let forms = [
                secret, String(decoding: JSONValue.string(secret).serialized.dropFirst().dropLast(), as: UTF8.self),
                PercentEncoding.encode(secret, keeping: CharacterClass.isASCIIAlphanumeric),
                Data(bytes).base64EncodedString(), Base64URL.encode(bytes), Hex.encode(bytes),
            ]
            func partOfSecret(_ text: Substring) -> Bool { forms.contains { $0.contains(text) || text.contains($0) } }
            // Runs are what tokens are made of (ASCII letters and digits, `-_.~%`); anything else cuts.
            func separates(_ c: Character) -> Bool { !(c.isASCII && (c.isLetter || c.isNumber || "-_.~%".contains(c))) }
            // The line as alternating runs and single separators, by their ranges.
            var pieces: [Range<String.Index>] = []
            var start = line.startIndex
            for index in line.indices where separates(line[index]) {
                if start < index { pieces.append(start..<index) }
                pieces.append(index..<line.index(after: index))
                start = line.index(after: index)
            }
            if start < line.endIndex { pieces.append(start..<line.endIndex) }
            var hidden = [Bool](repeating: false, count: pieces.count)
            for (k, range) in pieces.enumerated() where !hidden[k] && line[range].count >= minimumPiece && partOfSecret(line[range]) {
                var (low, high) = (k, k)
                while low > 0, partOfSecret(line[pieces[low - 1].lowerBound..<pieces[high].upperBound]) { low -= 1 }
                while high + 1 < pieces.count, partOfSecret(line[pieces[low].lowerBound..<pieces[high + 1].upperBound]) { high += 1 }
                for n in low...high { hidden[n] = true }
            }
            var out = ""
            for (k, range) in pieces.enumerated() {
                if hidden[k] {
                    if k == 0 || !hidden[k - 1] { out += "[token]" }
                } else {
                    out += line[range]
                }
            }
            return out
        }
    }
}
