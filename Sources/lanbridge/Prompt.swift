import Glibc
import LanbridgeNet
import LanbridgeProtocol

/// Asking the operator at a terminal, for what must be typed from another screen (a code, a
/// fingerprint): the question goes to stderr, so `--json` output stays clean.
enum Prompt {
    /// The answer, trimmed; nil when stdin is not a terminal (a script must pass the option) or empty.
    static func ask(_ question: String) -> String? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        StandardStream.write(question)
        guard let line = readLine(strippingNewline: true) else { return nil }
        let answer = line.trimmingSpaces
        return answer.isEmpty ? nil : answer
    }
}
