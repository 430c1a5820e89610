import CAvahiClient
import FoundationEssentials
import LanbridgeProtocol
import Logging

/// Browses `_lanbridge._tcp` through avahi-daemon and resolves each service it finds.
public struct AvahiBrowser: BridgeDiscovery {
    private let logger: Logger

    public init(logger: Logger = Logger(label: "lanbridge.discovery")) {
        self.logger = logger
    }

    public func events() -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        do {
            let session = try BrowseSession(continuation: continuation, logger: logger)
            try session.start()
            continuation.onTermination = { _ in session.stop() }
        } catch {
            logger.warning("cannot browse for bridges: \(error)")
            continuation.finish()
        }
        return stream
    }
}

/// One browse: its own Avahi client; lives until the stream ends.
private final class BrowseSession: @unchecked Sendable {
    private let loop: AvahiClientLoop
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private var browser: OpaquePointer?  // poll thread / lock only

    init(continuation: AsyncStream<DiscoveryEvent>.Continuation, logger: Logger) throws {
        loop = try AvahiClientLoop(logger: logger)
        self.continuation = continuation
        loop.onState = { [unowned self] client, state in
            if state == AVAHI_CLIENT_S_RUNNING, browser == nil { browse(client) }
        }
        loop.onLost = { [unowned self] in browser = nil }  // freed with its client
    }

    func start() throws { try loop.start() }

    func stop() {
        loop.withLock {
            if let browser { avahi_service_browser_free(browser) }
            browser = nil
        }
        loop.stop()
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func browse(_ client: OpaquePointer) {
        browser = avahi_service_browser_new(
            client, Int32(AVAHI_IF_UNSPEC), Int32(AVAHI_PROTO_INET), BridgeAdvertisement.serviceType, nil, AvahiLookupFlags(rawValue: 0),
            { _, interface, proto, event, name, type, domain, _, userdata in
                guard let userdata, let name, let type, let domain else { return }
                Unmanaged<BrowseSession>.fromOpaque(userdata).takeUnretainedValue()
                    .browserEvent(event, interface: interface, proto: proto, name: name, type: type, domain: domain)
            }, userdata)
    }

    private func browserEvent(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, proto: AvahiProtocol,
        name: UnsafePointer<CChar>, type: UnsafePointer<CChar>, domain: UnsafePointer<CChar>
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let client = loop.client else { return }
            _ = avahi_service_resolver_new(
                client, interface, proto, name, type, domain, Int32(AVAHI_PROTO_INET), AvahiLookupFlags(rawValue: 0),
                { resolver, _, _, event, name, _, _, host, address, port, txt, _, userdata in
                    defer { if let resolver { avahi_service_resolver_free(resolver) } }
                    guard event == AVAHI_RESOLVER_FOUND, let userdata, let name, let host, let address else { return }
                    var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
                    avahi_address_snprint(&text, text.count, address)
                    var strings: [String] = []
                    var item = txt
                    while let current = item {
                        strings.append(
                            String(decoding: UnsafeRawBufferPointer(start: avahi_string_list_get_text(current), count: avahi_string_list_get_size(current)), as: UTF8.self))
                        item = avahi_string_list_get_next(current)
                    }
                    let bridge = DiscoveredBridge(
                        name: String(cString: name), host: String(cString: host),
                        addresses: [String(cString: text)], port: Int(port),
                        advertisement: BridgeAdvertisement(txt: strings))
                    Unmanaged<BrowseSession>.fromOpaque(userdata).takeUnretainedValue().continuation.yield(.found(bridge))
                }, userdata)
        case AVAHI_BROWSER_REMOVE:
            continuation.yield(.removed(name: String(cString: name)))
        default:
            break
        }
    }
}
