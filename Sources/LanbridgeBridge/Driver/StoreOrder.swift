/// When an event may reach the core, against reads of the pairing store: a value with no loop and
/// no files, so its rules are tested alone (StoreOrderTests). The driver asks it, and does what it
/// answers: run the event now, hold it, or hold it and start a read.
///
/// - An event `inOrder` runs at once, unless events before it are held: then after them.
/// - An event that needs a `fresh` store (a new connection, the operator) runs at once when the
///   cached store is the one on disk (one `stat`, the caller's), else waits for a read.
/// - A read asked for while one is under way is made once more after it (`readAgain`): a change
///   inotify saw during a read is not lost.
/// - After a stop no read comes, so nothing waits for one: what is held is released.
struct StoreOrder<Event> {
    enum Verdict: Equatable {
        case run
        case hold
        /// Hold it and start a read of the store now.
        case holdAndRead
    }

    private var held: [Event] = []
    private(set) var reading = false
    private var readAgain = false
    private(set) var stopped = false

    var heldCount: Int { held.count }

    /// An event that waits its turn behind any held ones.
    mutating func inOrder(_ event: Event) -> Verdict {
        guard !held.isEmpty || reading else { return .run }
        held.append(event)
        return .hold
    }

    /// An event that needs the store as it is on disk; `current` says whether the cached one is
    /// (asked only when nothing is held and no read is under way).
    mutating func fresh(_ event: Event, current: () -> Bool) -> Verdict {
        if stopped { return .run }
        if held.isEmpty, !reading {
            if current() { return .run }
            held.append(event)
            reading = true
            return .holdAndRead
        }
        held.append(event)
        return .hold
    }

    /// inotify (or a write of the bridge's own) says the store may have changed: true when a read
    /// should start now; false when one is under way (it reads once more after) or after a stop.
    mutating func readSoon() -> Bool {
        if stopped { return false }
        if reading {
            readAgain = true
            return false
        }
        reading = true
        return true
    }

    /// A read came back. `changedSince`: the file is not the one just read. True: read again
    /// before anything held runs; false: the held events run (`next`).
    mutating func readDone(changedSince: Bool) -> Bool {
        reading = false
        guard !stopped, readAgain || changedSince else { return false }
        readAgain = false
        reading = true
        return true
    }

    /// The oldest held event, to run now; nil when none is held or a read is under way (one an
    /// event just released started holds the rest).
    mutating func next() -> Event? {
        guard !reading, !held.isEmpty else { return nil }
        return held.removeFirst()
    }

    /// The bridge stops: no read will come, so what was held runs now (the stopped core answers it).
    mutating func stop() -> [Event] {
        stopped = true
        reading = false
        readAgain = false
        defer { held.removeAll() }
        return held
    }
}
