import FoundationEssentials
import LanbridgeState
import LanbridgeStores
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Server-sent events for the console's live parts: one event per topic that changed (the page
/// then fetches its fragment), and a comment every 25 s so proxies keep the stream open. At most
/// `maxStreams`; a new one evicts the oldest.
final class ConsoleEvents: Sendable {
    /// What changed; a page's live section names the topics it follows (`data-events`).
    enum Topic: String, Sendable, CaseIterable {
        /// pending.json, paired.json or runtime.json.
        case change
        /// An invoke started or stopped waiting for the operator's answer.
        case asks
        /// The activity feed grew.
        case activity
    }

    static let maxStreams = 16
    /// A topic is sent at most once per this long: a feed growing 300 times a second makes a
    /// page fetch its fragment a few times a second, not 300.
    static let coalescing = TimeAmount.milliseconds(250)

    private let streams = NIOLockedValueBox<(next: Int, open: [(id: Int, sink: HTTPEventSink)])>((0, []))
    /// Topics changed and not yet sent (their send is scheduled).
    private let due = NIOLockedValueBox<Set<Topic>>([])
    private let loop: any EventLoop
    private let watcher: StoreWatcher
    private let keepAlive: RepeatedTask

    init(directory: URL) throws {
        watcher = try StoreWatcher(directory: directory, files: [PairingStore.pendingFileName, PairingStore.pairedFileName, RuntimeStatusFile.fileName])
        loop = MultiThreadedEventLoopGroup.singleton.next()
        let streams = streams
        keepAlive = loop.scheduleRepeatedTask(initialDelay: .seconds(25), delay: .seconds(25)) { _ in
            for stream in streams.withLockedValue({ $0.open }) { stream.sink.send(": keep-alive\n\n") }
        }
    }

    /// Runs until the watcher stops.
    func run() async {
        for await _ in watcher.changes() { send(.change) }
    }

    /// From any thread: `topic` changed; it is sent within `coalescing`.
    func changed(_ topic: Topic) {
        let first = due.withLockedValue { $0.insert(topic).inserted }
        guard first else { return }
        loop.scheduleTask(in: Self.coalescing) { [self] in
            due.withLockedValue { _ = $0.remove(topic) }
            send(topic)
        }
    }

    private func send(_ topic: Topic) {
        for stream in streams.withLockedValue({ $0.open }) { stream.sink.send("event: \(topic.rawValue)\ndata: \n\n") }
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
