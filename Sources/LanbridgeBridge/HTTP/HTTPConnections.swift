import NIOConcurrencyHelpers
import NIOCore

/// The connections one HTTP listener holds, bounded in all and per peer (a uid on loopback, an
/// address elsewhere), so that no local user can take every descriptor the daemon has (issue 36:
/// 1,126 idle connections from `nobody` left nodes, the CLI and the store without one). Past a
/// peer's own bound its new connection is refused; past the total, the busiest peer's oldest
/// connection is evicted, so one peer's flood degrades itself, not everyone.
struct HTTPConnectionTable {
    struct Limits: Equatable, Sendable {
        var total = 64
        var perPeer = 16
    }

    enum Admission: Equatable {
        case admitted(id: Int)
        case refused
        /// Admitted, and `evict` (another peer's connection) must be closed.
        case admittedEvicting(id: Int, evict: Int)
    }

    let limits: Limits
    private var open: [Int: (peer: String, order: Int)] = [:]
    private var byPeer: [String: Int] = [:]
    private var next = 0

    init(limits: Limits = Limits()) { self.limits = limits }

    var count: Int { open.count }

    mutating func admit(peer: String) -> Admission {
        guard byPeer[peer, default: 0] < limits.perPeer else { return .refused }
        var evicted: Int?
        if open.count >= limits.total, let busiest = byPeer.max(by: { $0.value < $1.value })?.key,
            let oldest = open.filter({ $0.value.peer == busiest }).min(by: { $0.value.order < $1.value.order })?.key
        {
            remove(oldest)
            evicted = oldest
        }
        next += 1
        open[next] = (peer, next)
        byPeer[peer, default: 0] += 1
        return evicted.map { .admittedEvicting(id: next, evict: $0) } ?? .admitted(id: next)
    }

    mutating func remove(_ id: Int) {
        guard let entry = open.removeValue(forKey: id) else { return }
        let left = byPeer[entry.peer, default: 1] - 1
        byPeer[entry.peer] = left > 0 ? left : nil
    }
}

/// `HTTPConnectionTable` shared by a listener's connections, with the channels to evict.
final class HTTPConnections: Sendable {
    private let state: NIOLockedValueBox<(table: HTTPConnectionTable, channels: [Int: any Channel])>

    init(limits: HTTPConnectionTable.Limits = .init()) { state = NIOLockedValueBox((HTTPConnectionTable(limits: limits), [:])) }

    /// Admits `channel` for `peer`, or returns false (the caller closes it). A connection evicted
    /// to make room is closed here; every admitted one leaves the table when it closes.
    func admit(_ channel: any Channel, peer: String) -> Bool { admitted(channel, peer: peer) != nil }

    /// A connection that stops being this table's before it closes (the browser door's, once it
    /// becomes a node's session, which the node admission bounds from then on).
    func release(_ id: Int) {
        state.withLockedValue {
            $0.table.remove(id)
            $0.channels[id] = nil
        }
    }

    /// As `admit`, with the connection's place in the table (for `release`), or nil when refused.
    func admitted(_ channel: any Channel, peer: String) -> Int? {
        let (admission, evicted) = state.withLockedValue { state -> (HTTPConnectionTable.Admission, (any Channel)?) in
            let admission = state.table.admit(peer: peer)
            var evicted: (any Channel)?
            switch admission {
            case .refused: return (admission, nil)
            case let .admitted(id): state.channels[id] = channel
            case let .admittedEvicting(id, evict):
                state.channels[id] = channel
                evicted = state.channels.removeValue(forKey: evict)
            }
            return (admission, evicted)
        }
        evicted?.close(promise: nil)
        let id: Int
        switch admission {
        case .refused: return nil
        case let .admitted(admitted), let .admittedEvicting(admitted, _): id = admitted
        }
        channel.closeFuture.whenComplete { [self] _ in release(id) }
        return id
    }

    var count: Int { state.withLockedValue { $0.table.count } }
}
