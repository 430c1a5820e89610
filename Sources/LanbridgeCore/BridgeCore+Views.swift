import LanbridgeState

/// What the core shows its driver, as values: the driver reads these and nothing else of it
/// (issue 62: it read the book's and the feed's fields).
extension BridgeCore {
    /// Which paired.json the core holds, and whether it could read the store last time.
    package struct StoreView: Equatable {
        package var version: String
        package var readable: Bool
    }

    package var store: StoreView { StoreView(version: pairedVersion, readable: storeReadable) }

    /// What the core holds for peers: its connections, and the bytes of the answers it keeps for
    /// retries (the driver trims the heap when these shrink; runtime.json's pace follows them).
    package struct Load: Equatable {
        package var connections: Int
        package var keptBytes: Int
    }

    package var load: Load { Load(connections: connections.count, keptBytes: book.idempotency.bytesKept) }

    /// What `/healthz` and the gauges say of the core (linear in the nodes: asked for a probe, not per event).
    package struct Health: Equatable {
        package var listening: Bool
        package var storeReadable: Bool
        package var stateProblem: String?
        package var gatewayConfigured: Bool
        package var gatewayStatus: String
        package var paired: Int
        package var pending: Int
        package var connected: Int
        package var foreground: Int
    }

    package var health: Health {
        Health(
            listening: !runtime.listening.isEmpty, storeReadable: storeReadable, stateProblem: stateWrites.summary,
            gatewayConfigured: gateway.configured, gatewayStatus: runtime.gateway ?? "off",
            paired: lastState.paired.nodes.count, pending: lastState.pending.requests.count,
            connected: live.count, foreground: live.values.filter(\.foreground).count)
    }
}
