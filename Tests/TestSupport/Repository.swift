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
}
