import Foundation
@testable import LanbridgeBridge
@testable import LanbridgeCore
@testable import LanbridgeNet
@testable import LanbridgeProtocol
import Logging
import NIOConcurrencyHelpers
import Testing

/// Issue 36 §3: what a node chooses cannot forge a log line, reach a terminal raw, or flood the log.
@Suite struct LogSafetyTests {
    static let forged = "x\nts=2026-11-26T00:00:00Z level=warning logger=lanbridge msg=\"pairing revoked\"\u{1B}[2J\u{1B}]0;owned\u{07}\r\u{2028}\u{202E}"

    @Test(arguments: [false, true]) func aValueAPeerChoseStaysOnItsLineAndCannotDriveATerminal(interactive: Bool) {
        let handler = LineLogHandler(label: "lanbridge", interactive: interactive, journal: false)
        let line = handler.line(
            for: LogEvent(
                level: .notice, message: "dropped a result \(Self.forged)", metadata: ["invoke": "\(Self.forged)"],
                source: "", file: "", function: "", line: 0), time: Date(timeIntervalSince1970: 0))
        #expect(!line.contains("\n") && !line.contains("\r"), "one line: \(line)")
        #expect(!line.unicodeScalars.contains { SafeText.isUnsafe($0) }, "no control character, separator or bidi override: \(line)")
        #expect(line.contains("\\u{1B}[2J") && line.contains("\\n"), "what was there is still visible, escaped: \(line)")
        if !interactive {
            // The forged text is inside the quoted value: a reader splitting key=value pairs sees
            // one msg and one invoke field, never a level=warning of its own.
            #expect(Self.logfmtKeys(line) == ["ts", "level", "logger", "msg", "invoke"], "\(line)")
        }
    }

    /// The keys a logfmt reader finds: `key=value` pairs split on spaces outside quotes, `\"` inside.
    static func logfmtKeys(_ line: String) -> [String] {
        var keys: [String] = [], token = "", quoted = false, escaped = false, inKey = true
        for c in line {
            if quoted {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { quoted = false }
                continue
            }
            switch c {
            case "\"": quoted = true
            case "=" where inKey: keys.append(token); inKey = false
            case " ": (token, inKey) = ("", true)
            default: if inKey { token.append(c) }
            }
        }
        return keys
    }

    @Test func aBackslashInTheInputCannotPassForAnEscape() {
        #expect(SafeText.escape("a\\nb") == "a\\\\nb")
        #expect(SafeText.escape("a\nb") == "a\\nb")
        #expect(SafeText.escape("plain text, unchanged: é ✓") == "plain text, unchanged: é ✓")
        #expect(SafeText.quote("say \"hi\"") == "\"say \\\"hi\\\"\"")
    }
}

/// A log handler that keeps what is logged, for the core's tests.
final class CapturedLog: @unchecked Sendable {
    let lines = NIOLockedValueBox<[String]>([])
    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { log.lines.withLockedValue { $0.append("\(event.message)") } }
    }
}

/// Issue 36 §3: the wake hook's output never carries the push token, in any form the hook prints it.
@Suite struct WakeHookOutputTests {
    func firstLine(_ text: String, hiding token: String) -> String {
        var line = HookRunner.FirstLine()
        Array(text.utf8).withUnsafeBytes { line.append($0) }
        return line.text(hiding: token)
    }

    static let plain = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    static let awkward = "tok\"en\\with\"quotes\\and-more-characters-0123456789"
    static let long = String(repeating: "Zq8x", count: 1000)

    @Test(arguments: [plain, awkward, long]) func theTokenIsHiddenAsIsEscapedCutOrEncoded(token: String) {
        let bytes = Array(token.utf8)
        let echoes = [
            "sent to \(token)",
            "{\"token\":\(String(decoding: JSONValue.string(token).serialized, as: UTF8.self))}",
            "device=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
            "b64 \(Data(bytes).base64EncodedString()) b64url \(Base64URL.encode(bytes)) hex \(Hex.encode(bytes))",
            "token \(token.prefix(22))… (truncated)",
        ]
        for echo in echoes {
            let shown = firstLine(echo, hiding: token)
            for piece in [token, String(token.prefix(22)), Hex.encode(bytes), Data(bytes).base64EncodedString()] {
                #expect(!shown.contains(String(piece.prefix(12))), "\(piece.prefix(12)) shows in \(shown)")
            }
        }
        #expect(firstLine("apns: 410 Unregistered device", hiding: token) == "apns: 410 Unregistered device", "plain words stay")
    }
}
