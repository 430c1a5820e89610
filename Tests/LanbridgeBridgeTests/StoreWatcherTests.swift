import Foundation
@testable import LanbridgeBridge
@testable import LanbridgeCore
import Testing

struct StoreWatcherTests {
    /// Issue 21: `stop` closed the inotify descriptor while the reader thread was blocked reading
    /// it; the thread stayed blocked for ever (and the stream never ended). Now `stop` wakes it.
    @Test(.timeLimit(.minutes(1)))
    func stopEndsTheStreamAndItsReader() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lanbridge-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url) }
        let watcher = try StoreWatcher(directory: url, files: ["paired.json"])
        var changes = watcher.changes().makeAsyncIterator()
        try Data("{}".utf8).write(to: url.appendingPathComponent("other.json"))
        try Data("{}".utf8).write(to: url.appendingPathComponent("paired.json"))
        #expect(await changes.next() != nil, "a change to a watched file is seen")
        watcher.stop()
        #expect(await changes.next() == nil, "the stream ends once stopped")
        watcher.stop()  // idempotent
    }
}
