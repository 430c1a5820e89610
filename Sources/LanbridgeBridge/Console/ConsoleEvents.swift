import Foundation
import LanbridgeState
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Server-sent events for the console's live parts: one `change` event whenever the pending,
/// paired or runtime file changes (the page then fetches its fragment), and a comment every 25 s
/// so proxies keep the stream open. At most `maxStreams`; a new one evicts the oldest.
final class ConsoleEvents: Sendable {
    static let maxStreams = 16
    private let streams = NIOLockedValueBox<[(id: Int, sink: HTTPEventSink)]>([])
    private let next = NIOLockedValueBox(0)
    private let watcher: StoreWatcher
    private let keepAlive: RepeatedTask

    init(directory: URL) throws {
        watcher = try StoreWatcher(directory: directory, files: [PairingStore.pendingFileName, PairingStore.pairedFileName, RuntimeStatusFile.fileName])
        let streams = streams
        keepAlive = MultiThreadedEventLoopGroup.singleton.next().scheduleRepeatedTask(initialDelay: .seconds(25), delay: .seconds(25)) { _ in
            for stream in streams.withLockedValue({ $0 }) { stream.sink.send(": keep-alive\n\n") }
        }
    }

    /// Runs until the watcher stops.
    func run() async {
        for await _ in watcher.changes() { broadcast("event: change\ndata: \n\n") }
    }

    func broadcast(_ text: String) {
        for stream in streams.withLockedValue({ $0 }) { stream.sink.send(text) }
    }

    func add(_ sink: HTTPEventSink) {
        let id = next.withLockedValue { $0 += 1; return $0 }
        let evicted = streams.withLockedValue { streams -> HTTPEventSink? in
            streams.append((id, sink))
            return streams.count > Self.maxStreams ? streams.removeFirst().sink : nil
        }
        evicted?.close()
        sink.send("retry: 2000\n\n")
        sink.closed.whenComplete { [streams] _ in streams.withLockedValue { $0.removeAll { $0.id == id } } }
    }

    var count: Int { streams.withLockedValue { $0.count } }

    func stop() {
        keepAlive.cancel()
        watcher.stop()
        for stream in streams.withLockedValue({ $0 }) { stream.sink.close() }
    }
}
