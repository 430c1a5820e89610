/// A bridge found on the LAN. Everything here came from the network unauthenticated: use it to
/// connect, then trust only the key the handshake proves.
public struct DiscoveredBridge: Equatable, Sendable, Codable {
    public var name: String
    public var host: String
    public var addresses: [String]
    public var port: Int
    /// The TXT hints, if they parsed.
    public var versions: String?
    public var shortFingerprint: String?

    public init(name: String, host: String, addresses: [String], port: Int, advertisement: BridgeAdvertisement?) {
        (self.name, self.host, self.addresses, self.port) = (name, host, addresses, port)
        versions = advertisement.map { "\($0.versions.min)-\($0.versions.max)" }
        shortFingerprint = advertisement?.shortFingerprint
    }
}

public enum DiscoveryEvent: Equatable, Sendable {
    case found(DiscoveredBridge)
    case removed(name: String)
}

/// Finds bridges. Linux uses Avahi (`AvahiBrowser`); an Apple build would wrap `NWBrowser`.
/// The stream runs until the consumer stops iterating.
public protocol BridgeDiscovery: Sendable {
    func events() -> AsyncStream<DiscoveryEvent>
}

extension BridgeDiscovery {
    /// Every bridge seen within `seconds`, by name, minus those that went away.
    public func bridges(within seconds: Double) async -> [DiscoveredBridge] {
        let stream = events()
        let collector = Task {
            var seen: [String: DiscoveredBridge] = [:]
            for await event in stream {  // ends when the task is cancelled
                switch event {
                case let .found(bridge): seen[bridge.name] = bridge
                case let .removed(name): seen[name] = nil
                }
            }
            return seen
        }
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        collector.cancel()
        return await collector.value.values.sorted { $0.name < $1.name }
    }
}

/// Several ways of finding bridges as one (mDNS and wide-area DNS-SD, say): every source's events,
/// as they come. Their names should not collide (`WideAreaBrowser` names carry their domain).
public struct CombinedDiscovery: BridgeDiscovery {
    public let sources: [any BridgeDiscovery]
    public init(_ sources: [any BridgeDiscovery]) { self.sources = sources }

    public func events() -> AsyncStream<DiscoveryEvent> {
        AsyncStream { continuation in
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    for source in sources {
                        group.addTask { for await event in source.events() { continuation.yield(event) } }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
