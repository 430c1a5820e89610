import CAvahiClient
import FoundationEssentials
import LanbridgeProtocol
import Logging

/// Advertises the bridge as `_lanbridge._tcp` through the system's avahi-daemon.
///
/// Follows libavahi-client's rules: services are created when the client reaches `S_RUNNING`; a
/// name collision (group `COLLISION`, or `AVAHI_ERR_COLLISION` from add) picks
/// `avahi_alternative_service_name` and registers again; `S_COLLISION`/`S_REGISTERING` reset the
/// group; a lost daemon is waited for (`AvahiClientLoop`). `stop()` withdraws the service, so
/// peers see it go at once.
public final class AvahiPublisher: @unchecked Sendable {
    public enum Status: Equatable, Sendable {
        case waitingForDaemon
        case registering(name: String)
        case published(name: String)
        case failed(String)
    }

    private let loop: AvahiClientLoop
    private let port: UInt16
    private let txt: [String]
    private let interfaceIndex: Int32
    private let logger: Logger
    // Poll thread / poll lock only:
    private var group: OpaquePointer?
    private var name: String
    private var status: Status?  // nil until the first report, so that one is always announced
    private var warnedAboutDaemon = false
    /// Called on Avahi's thread whenever the status changes.
    public var onStatus: @Sendable (Status) -> Void = { _ in }

    /// Another service under the same instance name (set before `start`): OpenClaw's
    /// `_openclaw-gw._tcp` for its own apps' front door.
    public struct Extra: Sendable, Equatable {
        public var type: String
        public var port: UInt16
        public var txt: [String]
        public init(type: String, port: Int, txt: [String]) { (self.type, self.port, self.txt) = (type, UInt16(port), txt) }
    }
    public var extras: [Extra] = []

    /// `interfaceIndex` nil publishes on every interface avahi-daemon serves.
    public init(name: String, port: Int, advertisement: BridgeAdvertisement, interfaceIndex: Int32?, logger: Logger) throws {
        loop = try AvahiClientLoop(logger: logger)
        self.name = name
        self.port = UInt16(port)
        txt = advertisement.txt
        self.interfaceIndex = interfaceIndex ?? Int32(AVAHI_IF_UNSPEC)
        self.logger = logger
        loop.onState = { [unowned self] client, state in clientStateChanged(client, state) }
        loop.onLost = { [unowned self] in
            group = nil  // freed with its client
            set(.waitingForDaemon)
        }
    }

    public func start() throws {
        try loop.start()
    }

    /// New TXT records for an extra service, announced at once when it is registered (a rotated
    /// certificate's fingerprint for OpenClaw's apps); kept for the next registration either way.
    public func updateExtra(type: String, txt: [String]) {
        loop.withLock {
            guard let index = extras.firstIndex(where: { $0.type == type }) else { return }
            extras[index].txt = txt
            guard let group, avahi_entry_group_is_empty(group) == 0 else { return }
            let ordered = avahi_string_list_reverse(txt.reduce(nil as UnsafeMutablePointer<AvahiStringList>?) { avahi_string_list_add($0, $1) })
            defer { avahi_string_list_free(ordered) }
            let rc = avahi_entry_group_update_service_txt_strlst(
                group, interfaceIndex, Int32(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(rawValue: 0),
                name, type, nil, ordered)
            if rc != 0 { logger.warning("mDNS: cannot update the TXT of \(type): \(String(cString: avahi_strerror(rc)))") }
        }
    }

    /// Withdraws the service (goodbye packets) and stops.
    public func stop() {
        loop.withLock {
            if let group { avahi_entry_group_free(group) }
            group = nil
        }
        loop.stop()
    }

    // MARK: - Poll thread

    private func set(_ new: Status) {
        guard new != status else { return }
        status = new
        onStatus(new)
    }

    private func clientStateChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            createService(client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)registered: our records must wait.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            if !warnedAboutDaemon {
                warnedAboutDaemon = true
                logger.warning(
                    "avahi-daemon is not reachable, so nodes cannot discover this bridge; they can still connect by address. Fix: apt-get install avahi-daemon && systemctl start avahi-daemon (lanbridge keeps retrying)"
                )
            }
            set(.waitingForDaemon)
        case AVAHI_CLIENT_FAILURE:
            let message = String(cString: avahi_strerror(avahi_client_errno(client)))
            logger.error("Avahi client failed: \(message)")
            set(.failed(message))
        default:
            break
        }
    }

    private func createService(_ client: OpaquePointer) {
        if group == nil {
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            group = avahi_entry_group_new(
                client,
                { group, state, userdata in
                    guard let userdata else { return }
                    Unmanaged<AvahiPublisher>.fromOpaque(userdata).takeUnretainedValue().groupStateChanged(state)
                }, userdata)
        }
        guard let group else { return set(.failed("cannot create an entry group")) }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        while true {
            var rc = add(group, type: BridgeAdvertisement.serviceType, port: port, txt: txt)
            for extra in extras where rc == 0 { rc = add(group, type: extra.type, port: extra.port, txt: extra.txt) }
            if rc == Int32(AVAHI_ERR_COLLISION) {
                rename()
                avahi_entry_group_reset(group)
                continue
            }
            guard rc == 0 else { return set(.failed("add service: \(String(cString: avahi_strerror(rc)))")) }
            break
        }
        let rc = avahi_entry_group_commit(group)
        guard rc == 0 else { return set(.failed("commit: \(String(cString: avahi_strerror(rc)))")) }
        set(.registering(name: name))
    }

    private func add(_ group: OpaquePointer, type: String, port: UInt16, txt: [String]) -> Int32 {
        // avahi_string_list_add prepends; reversing (in place, new head) keeps the first entry first on the wire.
        let ordered = avahi_string_list_reverse(txt.reduce(nil as UnsafeMutablePointer<AvahiStringList>?) { avahi_string_list_add($0, $1) })
        defer { avahi_string_list_free(ordered) }
        return avahi_entry_group_add_service_strlst(
            group, interfaceIndex, Int32(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(rawValue: 0),
            name, type, nil, nil, port, ordered)
    }

    private func groupStateChanged(_ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            logger.info(
                "advertised on mDNS",
                metadata: [
                    "name": "\(name)", "type": "\(([BridgeAdvertisement.serviceType] + extras.map(\.type)).joined(separator: ", "))",
                    "port": "\(port)",
                ])
            set(.published(name: name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
            if let group, let client = loop.client {
                avahi_entry_group_reset(group)
                createService(client)
            }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let message = loop.client.map { String(cString: avahi_strerror(avahi_client_errno($0))) } ?? "unknown"
            logger.error("mDNS registration failed: \(message)")
            set(.failed(message))
        default:
            break
        }
    }

    private func rename() {
        guard let alternative = avahi_alternative_service_name(name) else { return }
        let old = name
        name = String(cString: alternative)
        avahi_free(alternative)
        logger.notice("mDNS name \"\(old)\" is taken on this network; advertising as \"\(name)\"")
    }
}
