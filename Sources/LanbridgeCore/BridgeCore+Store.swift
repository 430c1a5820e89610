import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Logging

/// The pairing store as it changes, and time as it passes: what is due is written, once.
extension BridgeCore {
    // MARK: - The store

    /// The files changed (the CLI, or the bridge's own write): tell waiting nodes the operator's
    /// decision, drop revoked ones.
    mutating func storeChanged(_ state: PairingState, version: String) {
        (storeReadable, storeProblem) = (true, nil)
        pairedVersion = version
        index(state)
        announceChanges(from: lastState, to: state)
        lastState = state
        reofferChangedCommands()
        actions.append(.replaceInvites(state))
        let pairedNow = paired
        book.heldRevoked(where: { pairedNow[$0] == nil }, now: now)
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            switch connection.phase {
            case .waiting, .challenged:
                resolveWaiting(connection.id)
            case .paired where paired[connection.nodeId]?.publicKey != connection.key:  // the index holds `state` now
                logger.info("pairing revoked; dropping the node", metadata: meta(connection))
                book.revoked(connection.nodeId, now: now)
                send(Revoked(nodeId: connection.nodeId), to: connection.id)
                actions.append(.close(connection.id))
                connections[connection.id] = nil
                sessions[connection.nodeId] = nil
                canvasSessionEnded(connection.nodeId)
                buckets.forget(connection.nodeId)
                if live.removeValue(forKey: connection.nodeId) != nil { runtimeChanged = true }
            default:
                break
            }
        }
    }

    mutating func storeUnreadable(_ error: any Error) {
        logger.error("cannot read the pairing store: \(error)")
        (storeReadable, storeProblem) = (false, "cannot read the pairing store: \(error)")
        stateWrites.readFailed(now: now)
    }

    // MARK: - A node that stops reading (issue 61 §4)

    /// Its outbox went over `nodeQueueBytes` (new invokes are refused NODE_BACKLOGGED until it
    /// drains to half), or drained.
    mutating func nodeBacklog(_ id: ConnectionID, _ backlogged: Bool) {
        guard let connection = connections[id], connection.backlogged != backlogged else { return }
        connections[id]?.backlogged = backlogged
        if backlogged {
            logger.warning(
                "the node does not read what it is sent: more than \(settings.limits[.nodeQueueBytes]) bytes wait for it; new invokes are refused NODE_BACKLOGGED",
                metadata: meta(connection))
        } else {
            logger.notice("the node reads again", metadata: meta(connection))
        }
    }

    // MARK: - The wall clock (issue 61 §2)

    /// A step of the wall clock (NTP setting a board that booted without a real-time clock, or
    /// an operator's `date -s`): logged once, and the lifetimes in memory move with it. Nothing
    /// times out or lives longer for it: deadlines run on the monotonic clock, and the store's
    /// lifetimes on the boot clock (`Lifetimes`).
    mutating func noticeClockStep(wall: Date) {
        let offset = wall.timeIntervalSince1970 - now.seconds
        defer { clockOffset = offset }
        guard let previous = clockOffset, abs(offset - previous) >= 2 else { return }
        let delta = offset - previous
        logger.notice(
            "the clock moved by \(delta > 0 ? "+" : "-")\(NumberText.fixed(abs(delta))) s; pending requests, invites and every deadline keep counting the time that really passed",
            metadata: ["wall": "\(ISO8601Text.string(wall))"])
        lastState.shiftLifetimes(by: delta)
    }

    // MARK: - A state directory that takes no writes (issue 61 §1)

    /// A store write failed. What is in memory keeps serving; nodes seen meanwhile are written
    /// once writes work again; the directory is looked at every few seconds until they do.
    mutating func stateWriteFailed(_ reason: String, change: StoreOperation.Change) {
        if case let .recordSeen(nodes, _) = change { seen.formUnion(nodes) }
        guard stateWrites.failed(reason, now: now, wall: wall) else { return }
        logger.warning(
            "the state directory takes no writes (\(stateWrites.problem ?? "")): paired nodes keep working from memory; pairing, approvals and lastSeen wait until it does, and lanbridge looks again every \(Int(StateWrites.probeInterval)) s"
        )
        runtime.stateProblem = stateWrites.summary
        runtimeChanged = true
    }

    /// The look at the state directory came back.
    mutating func stateProbed(_ problem: String?) {
        guard stateWrites.probed(problem, now: now) else {
            if runtime.stateProblem != stateWrites.summary { (runtime.stateProblem, runtimeChanged) = (stateWrites.summary, true) }
            return
        }
        logger.notice("the state directory takes writes again")
        runtime.stateProblem = nil
        runtimeChanged = true
    }

    // MARK: - Time

    /// Once a second: announces coalesced states, flushes lastSeen, and keeps pending requests
    /// alive or expires them. Writes the store only when something is due.
    mutating func tick(wall: Date) {
        for connection in connections.values where connection.coalescedStates > 0 || connection.droppedEvents > 0 || connection.droppedResults > 0 {
            // The state it ends in is announced at once; the counts go to the log once a minute.
            if connection.announcedForeground != connection.foreground { announceState(of: connection.id) }
            guard now.timeIntervalSince(connection.summarised) >= 60 else { continue }
            if connection.coalescedStates > 0 {
                logger.notice(
                    "\(connection.coalescedStates) state changes from this node coalesced (over \(settings.limits[.statesPerMinute]) a minute)",
                    metadata: meta(connection))
            }
            if connection.droppedEvents > 0 {
                logger.notice("dropped \(connection.droppedEvents) events from this node (over its event limits)", metadata: meta(connection))
            }
            if connection.droppedResults > 0 {
                logger.notice(
                    "dropped \(connection.droppedResults) more results from this node that answered no invoke in flight",
                    metadata: meta(connection))
            }
            connections[connection.id]?.coalescedStates = 0
            connections[connection.id]?.droppedEvents = 0
            connections[connection.id]?.droppedResults = 0
            connections[connection.id]?.summarised = now
        }
        // The first write comes an interval after the first tick, not amid the reconnect storm a
        // restart brings (at 10,000 nodes it rewrote and re-read a 4.5 MB paired.json meanwhile).
        if seenFlushed == .distantPast { seenFlushed = now }
        if !seen.isEmpty, now.timeIntervalSince(seenFlushed) >= Self.seenInterval { flushSeen(now: now, wall: wall) }
        let waiting = Set(connections.values.compactMap { c -> String? in if case let .waiting(id) = c.phase { id } else { nil } })
        // The cached state (kept current by inotify and the version check) is enough to tell
        // whether anything is due; reading the files every second would cost O(paired nodes).
        let due = lastState.pending.requests.contains { request in
            request.expiresAt <= wall
                || (waiting.contains(request.requestId) && request.expiresAt.timeIntervalSince(wall) < pairingTiming.timeToLive / 2
                    && request.expiresAt < request.createdAt.addingTimeInterval(pairingTiming.hardCap))
        }
        if due, !storeOperations.values.contains(where: { if case .maintain = $0.change { true } else { false } }) {
            updateStore(.maintain(waiting: waiting, now: wall, timing: pairingTiming), for: nil)
        }
        // An unwritable state directory, or an unreadable store, is looked at again now and then.
        if stateWrites.probeDue(now: now, unreadable: !storeReadable) { actions.append(.probeState(read: !storeReadable)) }
    }

    /// A ping to every connection, each written without waiting for any other.
    mutating func pingAll() {
        pingCounter += 1
        for id in connections.keys.sorted() { send(Ping(id: pingCounter), to: id) }
    }

    /// How often the nodes seen are written to paired.json (and at stop).
    static let seenInterval: TimeInterval = 30

    mutating func flushSeen(now: Moment, wall: Date) {
        guard !seen.isEmpty else { return }
        updateStore(.recordSeen(seen, now: wall), for: nil)
        seen.removeAll()
        seenFlushed = now
    }

    mutating func updateStore(_ change: StoreOperation.Change, for connection: ConnectionID?) {
        nextOperation += 1
        storeOperations[nextOperation] = (connection, change)
        actions.append(.updateStore(StoreOperation(id: nextOperation, change: change)))
    }

    /// The bridge is stopping: lastSeen is written, invokes fail, connections close.
    mutating func shutdown(wall: Date) {
        for connection in connections.values where connection.isPaired { seen.insert(connection.nodeId) }
        flushSeen(now: now, wall: wall)
        book.stopping(now: now)
        for id in connections.keys.sorted() { actions.append(.close(id)) }
        connections.removeAll()
        sessions.removeAll()
    }
}
