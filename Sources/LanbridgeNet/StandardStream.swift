import Glibc

/// Standard output and error, written whole and unbuffered (a pipe must not hold a line back).
public enum StandardStream {
    public static func writeLine(_ text: String, toError: Bool = true) {
        write(text + "\n", toError: toError)
    }

    /// Without a line end (a prompt).
    public static func write(_ text: String, toError: Bool = true) {
        Array(text.utf8).withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                #if canImport(Glibc)
                    let written = Glibc.write(toError ? 2 : 1, base + offset, buffer.count - offset)
                #else
                    let written = Darwin.write(toError ? 2 : 1, base + offset, buffer.count - offset)
                #endif
                if written > 0 { offset += written } else if written < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
