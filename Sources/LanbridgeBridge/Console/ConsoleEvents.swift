import FoundationEssentials
import LanbridgeState
import LanbridgeStores
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Server-sent events for the console's live parts: one `change` event whenever the pending,
/// paired or runtime file changes (the page then fetches its fragment), and a comment every 25 s
/// so proxies keep the stream open. At most `maxStreams`; a new one evicts the oldest.
final class ConsoleEvents: Sendable {
    static let maxStreams = 16
    private let streams = NIOLockedValueBox<(next: Int, open: [(id: Int, sink: HTTPEventSink)])>((0, []))
    private let watcher: StoreWatcher
    private let keepAlive: RepeatedTask

    init(directory: URL) throws {
        watcher = try StoreWatcher(directory: directory, files: [PairingStore.pendingFileName, PairingStore.pairedFileName, RuntimeStatusFile.fileName])
        let streams = streams
        keepAlive = MultiThreadedEventLoopGroup.singleton.next().scheduleRepeatedTask(initialDelay: .seconds(25), delay: .seconds(25)) { _ in
            for stream in streams.withLockedValue({ $0.open }) { stream.sink.send(": keep-alive\n\n") }
        }
    }

    /// Runs until the watcher stops.
    func run() async {
        for await _ in watcher.changes() {
            for stream in streams.withLockedValue({ $0.open }) { stream.sink.send("event: change\ndata: \n\n") }
        }
    }

    func add(_ sink: HTTPEventSink) {
        let (id, evicted) = streams.withLockedValue { streams -> (Int, HTTPEventSink?) in
            streams.next += 1
            streams.open.append((streams.next, sink))
            return (streams.next, streams.open.count > Self.maxStreams ? streams.open.removeFirst().sink : nil)
        }
        evicted?.close()
        sink.send("retry: 2000\n\n")
        sink.closed.whenComplete { [streams] _ in streams.withLockedValue { $0.open.removeAll { $0.id == id } } }
    }

    func stop() {
        keepAlive.cancel()
        watcher.stop()
        for stream in streams.withLockedValue({ $0.open }) { stream.sink.close() }
    }
}
