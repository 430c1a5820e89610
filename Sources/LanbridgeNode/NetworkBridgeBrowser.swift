#if canImport(Network)
    @preconcurrency import Network
    #if canImport(FoundationEssentials)
        import FoundationEssentials
    #else
        import Foundation
    #endif
    import LanbridgeProtocol

    /// `BridgeDiscovery` on Apple platforms, on `NWBrowser` (Bonjour), for `_lanbridge._tcp`.
    ///
    /// Not compiled on Linux, where this project is built and tested (Linux nodes use
    /// `AvahiBrowser`), so it is kept small. `NWBrowser` reports services, not addresses: each found
    /// bridge is resolved with a short TCP connection, which the bridge counts as one unauthenticated
    /// attempt (PROTOCOL.md §3.1). Everything found is a hint; trust comes from the handshake.
    public struct NetworkBridgeBrowser: BridgeDiscovery {
        /// A browser for the local domain.
        public init() {}

        /// Found and removed bridges until the consumer stops iterating.
        public func events() -> AsyncStream<DiscoveryEvent> {
            AsyncStream { continuation in
                let queue = DispatchQueue(label: "lanbridge.discovery")
                let browser = NWBrowser(for: .bonjourWithTXTRecord(type: BridgeAdvertisement.serviceType, domain: nil), using: .tcp)
                browser.browseResultsChangedHandler = { _, changes in
                    for change in changes {
                        switch change {
                        case let .added(result):
                            Self.resolve(result, on: queue) { continuation.yield(.found($0)) }
                        case let .removed(result):
                            if case let .service(name, _, _, _) = result.endpoint { continuation.yield(.removed(name: name)) }
                        default:
                            break
                        }
                    }
                }
                continuation.onTermination = { _ in browser.cancel() }
                browser.start(queue: queue)
            }
        }

        private static func resolve(_ result: NWBrowser.Result, on queue: DispatchQueue, found: @escaping @Sendable (DiscoveredBridge) -> Void) {
            guard case let .service(name, _, _, _) = result.endpoint else { return }
            var txt: [String] = []
            if case let .bonjour(record) = result.metadata { txt = record.dictionary.map { "\($0.key)=\($0.value)" } }
            let hints = txt
            let connection = NWConnection(to: result.endpoint, using: .tcp)
            connection.stateUpdateHandler = { state in
                switch state {
                case .ready:
                    if case let .hostPort(host, port)? = connection.currentPath?.remoteEndpoint {
                        let address = "\(host)".split(separator: "%").first.map(String.init) ?? "\(host)"
                        found(
                            DiscoveredBridge(
                                name: name, host: address, addresses: [address], port: Int(port.rawValue),
                                advertisement: BridgeAdvertisement(txt: hints)))
                    }
                    connection.cancel()
                case .failed:
                    connection.cancel()
                default:
                    break
                }
            }
            connection.start(queue: queue)
        }
    }
#endif
