import FoundationEssentials
import Dispatch
import Glibc
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeState
import LanbridgeStores
import Logging
import NIOConcurrencyHelpers

/// Runs the operator's wake hook (`wake.exec`) for a `WakeCall`, off the relay loop: the node's push
/// registration is read from its 0600 file and handed over on stdin as one JSON document, with
/// nothing else of the daemon's (an allow-listed environment, no inherited descriptors, never the
/// gateway token). A run that outlives `timeoutMs` is killed with its process group. Its exit and
/// first line of output are logged (the token blanked out if the hook echoes it).
final class WakeHook: Sendable {
    /// Runs under way at once, in all; past it a call is skipped and counted (the core already
    /// allows one run per node per 30 s, this bounds many nodes at once).
    static let maxRunning = 4
    /// What a hook sees of the daemon's environment.
    static let environment = ["PATH", "LANG", "LC_ALL", "TZ", "HOME"]
    static let maxOutputLine = 200

    private let directory: StateDirectory
    private let logger: Logger
    private let metrics: BridgeMetrics
    private let running = NIOLockedValueBox(0)

    init(directory: StateDirectory, logger: Logger, metrics: BridgeMetrics) {
        (self.directory, self.logger, self.metrics) = (directory, logger, metrics)
        // A hook that exits without reading its input must not take the daemon with it (the
        // write to its stdin would raise SIGPIPE); sockets already ignore it per call.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Starts a run on its own thread; returns at once.
    func run(_ call: WakeCall) {
        guard call.hook.exec != nil else { return }
        let admitted = running.withLockedValue { count -> Bool in
            guard count < Self.maxRunning else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.warning("wake hook not run: \(Self.maxRunning) runs already under way", metadata: ["node": "\(call.node)"])
            return metrics.wake("skipped")
        }
        let started = DetachedThread.start { [self] in
            defer { running.withLockedValue { $0 -= 1 } }
            execute(call)
        }
        if !started {
            running.withLockedValue { $0 -= 1 }
            logger.error("wake hook not run: the system gave no thread for it", metadata: ["node": "\(call.node)"])
            metrics.wake("error")
        }
    }

    /// The document on the hook's stdin (PROTOCOL.md §12.3): absent push fields are null.
    static func document(_ call: WakeCall, push: PushRegistration?) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return [
            "version": 1, "nodeId": .string(call.node.description), "displayName": .string(call.displayName), "platform": .string(call.platform),
            "command": .string(call.command), "why": .string(call.why), "holdMs": .number(Double(call.holdMs)),
            "provider": text(push?.provider), "token": text(push?.token), "environment": text(push?.environment), "topic": text(push?.topic),
        ]
    }

    private func execute(_ call: WakeCall) {
        guard let exec = call.hook.exec else { return }
        var meta: Logger.Metadata = ["node": "\(call.node)", "command": "\(call.command)", "why": "\(call.why)"]
        let push: PushRegistration?
        do { push = try PushTokens(directory: directory).record(for: call.node)?.registration } catch {
            logger.error("wake hook: cannot read \(PushTokens.fileName): \(error)", metadata: meta)
            push = nil
        }
        meta["provider"] = "\(push?.provider ?? "none")"
        let input = Self.document(call, push: push).serialized

        let inherited = ProcessInfo.processInfo.environment
        let environment = Dictionary(uniqueKeysWithValues: Self.environment.compactMap { key in inherited[key].map { (key, $0) } })
        let process: HookProcess
        do throws(HookProcess.SpawnError) { process = try HookProcess.spawn(exec, arguments: call.hook.args, environment: environment) } catch {
            logger.error("wake hook could not start: \(error)", metadata: meta)
            return metrics.wake("error")
        }
        meta["latencyMs"] = "\(Int(Moment.now.timeIntervalSince(call.heldAt) * 1000))"
        logger.info("wake hook started", metadata: meta)

        // A late hook is killed with its group, but never once it is reaped (its PID may be
        // someone else's by then): the lock orders the kill against the reaping.
        enum Run { case running, timedOut, reaped }
        let run = NIOLockedValueBox(Run.running)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(call.hook.timeoutMs)) {
            run.withLockedValue { state in
                guard state == .running else { return }
                state = .timedOut
                process.killGroup()
            }
        }
        process.send(input)
        var output = FirstLine()
        // Past the kill, a second more for the output to end, then it is not waited for.
        let outputDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(call.hook.timeoutMs + 1000) * 1_000_000
        process.readOutput(until: outputDeadline) { output.append($0) }
        var timedOut = false
        let termination = process.wait {
            run.withLockedValue { state in
                timedOut = state == .timedOut
                state = .reaped
            }
        }

        meta["ms"] = "\(Int(Moment.now.timeIntervalSince(call.heldAt) * 1000))"
        meta["output"] = "\(output.text(hiding: push?.token))"
        if timedOut {
            logger.warning("wake hook timed out after \(call.hook.timeoutMs) ms", metadata: meta)
            metrics.wake("timeout")
        } else if termination == .exited(0) {
            logger.info("wake hook ran", metadata: meta.merging(["exit": "0"]) { $1 })
            metrics.wake("ok")
        } else {
            let how =
                switch termination {
                case let .exited(code): "exit \(code)";
                case let .signalled(signal): "signal \(signal)"
                }
            logger.warning("wake hook failed: \(how)", metadata: meta)
            metrics.wake("failed")
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
            return line.count > WakeHook.maxOutputLine ? String(line.prefix(WakeHook.maxOutputLine)) + "…" : line
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
