import Foundation

/// Paths inside this repository, for tests that read published files (pairing/vectors, python peers).
public enum Repository {
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    public static func url(_ relativePath: String) -> URL {
        root.appendingPathComponent(relativePath)
    }

    public static func json<T: Decodable>(_ type: T.Type, at relativePath: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: url(relativePath)))
    }

    /// A block of a file generated from code, between its `begin` and `end` lines: what the file
    /// shows (nil when a marker is missing). With `LANBRIDGE_REGENERATE=1` in the environment a
    /// block that differs from `wanted` is rewritten first, so the drift tests that read it pass.
    public static func generatedBlock(in relativePath: String, begin: String, end: String, wanted: String) throws -> String? {
        let file = url(relativePath)
        let text = try String(contentsOf: file, encoding: .utf8)
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else { return nil }
        let shown = String(text[start.upperBound..<stop.lowerBound])
        if shown != wanted, ProcessInfo.processInfo.environment["LANBRIDGE_REGENERATE"] == "1" {
            try (String(text[..<start.upperBound]) + wanted + String(text[stop.lowerBound...])).write(to: file, atomically: true, encoding: .utf8)
            return wanted
        }
        return shown
    }
}
