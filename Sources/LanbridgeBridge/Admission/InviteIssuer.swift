import FoundationEssentials
import LanbridgeCrypto
import LanbridgeDiscovery
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// Creates an invite and its URI: `lanbridge invite` and the console, one path.
public enum InviteIssuer {
    public typealias Issued = IssuedInvite

    /// Devices dial `ListeningAddress.dialable(host:port:runtime:)`, first choice in the URI's
    /// authority, the rest as `a=`. Everything is checked before the invite is written.
    public static func issue(
        directory: StateDirectory, name: String?, grant: ApprovalGrant, ttl: TimeInterval,
        host: String?, port: Int?, runtime: RuntimeStatus?, actor: String = AuditLog.currentUser
    ) throws -> Issued {
        let dial = ListeningAddress.dialable(host: host, port: port, runtime: runtime)
        let (secret, bridgeKey, now) = try create(directory: directory, name: name, grant: grant, ttl: ttl, actor: actor)
        let uri = InviteURI(
            host: dial[0].host, port: dial[0].port, bridgeFingerprint: Fingerprint(publicKey: bridgeKey),
            secret: secret.withUnsafeBytes { Array($0) }, name: name, alternates: Array(dial.dropFirst()))
        return Issued(uri: uri, expiresAt: now.addingTimeInterval(ttl))
    }

    /// The invite written (its secret, shown once), and the bridge key it pins: a native invite's and a browser's.
    private static func create(
        directory: StateDirectory, name: String?, grant: ApprovalGrant, ttl: TimeInterval, actor: String
    ) throws -> (secret: SecureBytes, bridgeKey: [UInt8], now: Date) {
        let bridgeKey = try IdentityStore(directory: directory).publicKey(creating: true)
        let now = Date()
        let secret = try PairingStore(directory: directory).update(actor: actor) { $0.createInvite(name: name, grant: grant, ttl: ttl, now: now) }
        return (secret, bridgeKey, now)
    }
}

extension InviteIssuer {
    public struct OpenClawSetup: Sendable, Equatable, Encodable {
        /// What the OpenClaw app scans or pastes: base64url of `{"url", "bootstrapToken"}`
        /// (OpenClaw's `src/pairing/setup-code.ts`). A secret until used.
        public let setupCode: String
        public let url: String
        public let expiresAt: Date
    }

    /// `invite --openclaw`: a single-use bootstrap token for OpenClaw's own apps and the setup code
    /// that carries it with the front door's `wss://` URL. Stored as a hash only.
    public static func issueOpenClaw(
        directory: StateDirectory, name: String?, grant: ApprovalGrant, ttl: TimeInterval,
        host: String?, port: Int?, runtime: RuntimeStatus?, actor: String = AuditLog.currentUser
    ) throws -> OpenClawSetup {
        let door = runtime?.openClawApps?.first
        let scheme = door?.hasPrefix("ws://") == true ? "ws" : "wss"
        let bound = door.flatMap { ListeningAddress.split(String($0.drop { $0 != "/" }.dropFirst(2))) }
        let doorPort = port ?? bound?.port ?? BridgeSettings.OpenClawApps.defaultPort
        let dial = ListeningAddress.dialable(host: host, port: doorPort, runtime: runtime)
        let url = "\(scheme)://\(dial[0])"
        let now = Date()
        let token = try PairingStore(directory: directory).update(actor: actor) { $0.createOpenClawBootstrap(name: name, grant: grant, ttl: ttl, now: now) }
        let json =
            "{\"url\":\(String(decoding: JSONValue.string(url).serialized, as: UTF8.self)),\"bootstrapToken\":\(String(decoding: JSONValue.string(token).serialized, as: UTF8.self))}"
        return OpenClawSetup(setupCode: Base64URL.encode(Array(json.utf8)), url: url, expiresAt: now.addingTimeInterval(ttl))
    }
}

extension InviteIssuer {
    public struct BrowserInvite: Sendable, Equatable, Encodable {
        /// The shell's page with the invite in its fragment: `https://name:port/#i=SECRET&fp=FINGERPRINT`.
        /// A browser never sends a fragment, and the page removes it from the address at once.
        public let url: String
        public let expiresAt: Date
    }

    /// `invite --browser` (issue 64): an invite for a browser, as a link to the browser door's page.
    /// `page` is the door's URL (the running daemon's, else made from the CA's first name and the
    /// configured port).
    public static func issueBrowser(
        directory: StateDirectory, name: String?, grant: ApprovalGrant, ttl: TimeInterval, page: String, actor: String = AuditLog.currentUser
    ) throws -> BrowserInvite {
        let (secret, bridgeKey, now) = try create(directory: directory, name: name, grant: grant, ttl: ttl, actor: actor)
        let url = "\(page)#i=\(Hex.encode(secret.withUnsafeBytes { Array($0) }))&fp=\(Fingerprint(publicKey: bridgeKey))"
        return BrowserInvite(url: url, expiresAt: now.addingTimeInterval(ttl))
    }

    /// The browser door's page devices open: the running daemon's, else what the CA (or
    /// `browser.names`) and the config say it will be; nil when neither says.
    public static func browserPage(directory: StateDirectory, settings: BridgeSettings, runtime: RuntimeStatus?) -> String? {
        if let page = runtime?.browser?.first { return page }
        let name: String? =
            switch settings.browser.tls {
            case .bridgeCA: (try? BridgeCAFiles.show(directory: directory))??.names.first
            case .files: settings.browser.names.first { !$0.hasPrefix("*.") }
            case .selfSigned: nil
            }
        guard let name else { return nil }
        let port = settings.browser.listen.flatMap(CanvasListen.init)?.port ?? BridgeSettings.Browser.defaultPort
        return "https://\(name):\(port)/"
    }
}

/// "host:port" as runtime.json lists addresses: "[::1]:18790" or "127.0.0.1:18790".
public enum ListeningAddress {
    /// One reader of "host:port" for the whole project: `ReachableAddress`'s.
    public static func split(_ text: String) -> (host: String, port: Int)? {
        ReachableAddress(text, defaultPort: 0).map { ($0.host, $0.port) }
    }

    /// Where devices should dial (invites, wide-area records), first choice first, never empty:
    /// the running daemon's `reachable` list (runtime.json), else its first listening address
    /// unless it is a wildcard, else this host's first LAN address. `host` goes first when given;
    /// `port`, when given, replaces every entry's (a forwarded port).
    public static func dialable(host: String?, port: Int?, runtime: RuntimeStatus?) -> [ReachableAddress] {
        let bound = runtime?.listening.first.flatMap(split)
        let fallbackHost = NetworkInterfaces.lanAddress() ?? InviteURI.validHost(ProcessInfo.processInfo.hostName) ?? "127.0.0.1"
        let defaultPort = bound?.port ?? BridgeConfiguration.defaultPort
        var list = ReachableAddress.list(runtime?.reachable ?? [])
        if list.isEmpty {
            list = [ReachableAddress(host: bound.map(\.host).flatMap { ["0.0.0.0", "::"].contains($0) ? nil : $0 } ?? fallbackHost, port: defaultPort)]
        }
        if let host { list.insert(ReachableAddress(host: host, port: list[0].port), at: 0) }
        if let port { list = list.map { ReachableAddress(host: $0.host, port: port) } }
        var seen = Set<ReachableAddress>()
        return Array(list.filter { seen.insert($0).inserted }.prefix(ReachableAddress.maxCount))
    }
}
