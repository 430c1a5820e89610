import FoundationEssentials
import LanbridgeProtocol

/// Per-node access rules: command patterns allowed (`canvas.*`), and patterns denied, which win.
/// Empty allows nothing.
public struct AccessRules: Codable, Equatable, Sendable {
    public var allow: [String]
    /// Carve-outs from `allow` (`nodes deny` on a command a wildcard allows).
    public var deny: [String]
    /// The sensitive patterns in `allow` an operator granted on purpose (approve or invite
    /// `--allow`, `nodes allow`, `--confirm-defaults`, the config's defaults), as opposed to what
    /// the platform defaults before 0.8.0 handed out. Omitted when empty.
    public var confirmed: [String]
    /// Commands the operator is asked about, each time it is invoked (`nodes ask`): deny wins over
    /// ask, ask over allow. Omitted when empty.
    public var ask: [String]

    public init(allow: [String] = [], deny: [String] = [], confirmed: [String] = [], ask: [String] = []) {
        (self.allow, self.deny, self.confirmed, self.ask) = (allow, deny, confirmed, ask)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allow = try c.decode([String].self, forKey: .allow)
        deny = try c.decodeIfPresent([String].self, forKey: .deny) ?? []  // absent before version 0.5
        confirmed = try c.decodeIfPresent([String].self, forKey: .confirmed) ?? []  // absent before 0.8
        ask = try c.decodeIfPresent([String].self, forKey: .ask) ?? []  // absent before 0.10
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allow, forKey: .allow)
        try c.encode(deny, forKey: .deny)
        if !confirmed.isEmpty { try c.encode(confirmed, forKey: .confirmed) }
        if !ask.isEmpty { try c.encode(ask, forKey: .ask) }
    }

    private enum CodingKeys: String, CodingKey { case allow, deny, confirmed, ask }

    /// Adds an allow rule the operator chose (a deny rule for the same pattern goes); a sensitive
    /// one is recorded as confirmed.
    public mutating func grant(_ pattern: String) {
        deny.removeAll { $0 == pattern }
        if !allow.contains(pattern) { allow.append(pattern) }
        if CommandCatalog.isSensitive(pattern: pattern), !confirmed.contains(pattern) { confirmed.append(pattern) }
    }
}

public enum PairingMethod: String, Codable, Sendable {
    case code, invite
    /// One of OpenClaw's own apps at the second front door, approved by the TLS fingerprint it
    /// showed (it has no verification code), or by an OpenClaw setup code.
    case openClawApp = "openclaw-app"
    /// A browser at the browser door, on a page whose origin the browser authenticated (the
    /// bridge's CA, or the admin's certificate), approved by its code.
    case browser
    /// A browser on a page it could not authenticate (a certificate clicked through): its code
    /// proves nothing against a man in the middle who served the page, so it is labelled as such.
    case browserUnverified = "browser-unverified"
}

/// Which browser door a connection came through, and so what its pairing is worth (issue 64).
public enum BrowserTier: String, Codable, Sendable {
    /// The browser authenticated the page: the bridge's CA or the admin's certificate.
    case verified = "browser"
    /// A self-signed certificate the user clicked through.
    case unverified = "browser-unverified"

    public var pairingMethod: PairingMethod { self == .verified ? .browser : .browserUnverified }
}

/// What one of OpenClaw's apps proved at the front door for them: its Ed25519 device, as the
/// gateway protocol names it. lanbridge keys the node by a hash of that key (`nodeKey`), which
/// no one can hold a Noise private key for, so such a node connects through that door only.
public struct OpenClawAppClaim: Codable, Equatable, Sendable {
    /// hex(SHA-256(raw Ed25519 key)): the app's own device ID.
    public var deviceId: String
    /// The raw Ed25519 key, base64url.
    public var publicKey: String
    /// `openclaw-ios`, `openclaw-android`, `openclaw-macos`, or `node-host`.
    public var clientId: String
    /// The SHA-256 of the certificate the app was shown: what the operator compares with the
    /// app's trust prompt (`lanbridge status`).
    public var tlsSha256: String?

    public init(deviceId: String, publicKey: String, clientId: String, tlsSha256: String?) {
        (self.deviceId, self.publicKey, self.clientId, self.tlsSha256) = (deviceId, publicKey, clientId, tlsSha256)
    }

    /// lanbridge's key for the app: SHA-256 of a label and the device key. A hash, so nobody has a
    /// private key for it and the Noise listener can never admit it.
    public static func nodeKey(ed25519 publicKey: [UInt8]) -> PublicKey {
        PublicKey(hashing: Array("lanbridge openclaw-app v1".utf8) + publicKey)
    }
}

/// A paired node, as kept in paired.json. Only public material: a leaked copy lets no one connect,
/// because connecting requires the node's private key in the Noise handshake.
public struct PairedNode: Codable, Equatable, Sendable {
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var details: NodeDetails
    public var pairingMethod: PairingMethod
    public var pairedAt: Date
    public var firstSeen: Date
    public var lastSeen: Date
    public var access: AccessRules
    /// True when the operator approved a code pairing without comparing the code (`--unverified`).
    public var unverified: Bool?
    /// Its latest push registration, without the token (kept in push-tokens.json).
    public var push: PushSummary?
    /// Set for one of OpenClaw's own apps (`pairingMethod` `openclaw-app`).
    public var openClawApp: OpenClawAppClaim?

    public init(publicKey: PublicKey, details: NodeDetails, pairingMethod: PairingMethod, pairedAt: Date, firstSeen: Date, access: AccessRules) {
        nodeId = publicKey.fingerprint
        self.publicKey = publicKey
        self.details = details
        self.pairingMethod = pairingMethod
        self.pairedAt = pairedAt
        self.firstSeen = firstSeen
        lastSeen = pairedAt
        self.access = access
    }
}

/// A key the operator rejected with `--block`: its pairing requests are ignored.
public struct BlockedKey: Codable, Equatable, Sendable {
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var displayName: String
    public var blockedAt: Date
}

/// A pairing request waiting for the operator, as kept in pending.json.
public struct PendingRequest: Codable, Equatable, Sendable {
    /// Why a request can never be approved. The operator sees it; the node must start over.
    public enum Lock: String, Codable, Sendable {
        /// The node asked for more code challenges than a request allows (re-rolling the code).
        case tooManyChallenges = "too-many-challenges"
        /// The revealed nonce did not match the commitment: what a man in the middle looks like.
        case commitmentFailed = "commitment-failed"

        public var explanation: String {
            switch self {
            case .tooManyChallenges: "the device asked for a new code too often (possible code grinding)"
            case .commitmentFailed: "the device's nonce did not match its commitment (possible man in the middle)"
            }
        }
    }

    public var requestId: String
    public var nodeId: Fingerprint
    public var publicKey: PublicKey
    public var details: NodeDetails
    public var sourceAddress: String?
    /// The verification code, once the node has revealed its nonce for the latest challenge.
    public var code: String?
    public var createdAt: Date
    public var expiresAt: Date
    /// Code challenges issued for this request: each one is a fresh chance at a matching code.
    public var challenges: Int
    /// `nodes approve --code` attempts that gave another code.
    public var codeMismatches: Int
    /// Set once the request may no longer be approved.
    public var locked: Lock?
    /// Set for one of OpenClaw's own apps: approved without a code (it shows none).
    public var openClawApp: OpenClawAppClaim?
    /// Set for a browser at the browser door: the pairing method its approval records.
    public var browser: BrowserTier?

    /// The platform whose defaults its approval gives: a browser's claimed platform is not
    /// trusted for them (every page gets the web's); anything else's is its own claim.
    public var platformForDefaults: String { browser != nil ? "web" : details.platform }
    /// The boot it was made in, and the boot clock then (`Lifetimes`); absent in files written before these were kept.
    public var bootId: String?
    public var bootCreatedNs: Int64?

    public init(requestId: String, publicKey: PublicKey, details: NodeDetails, sourceAddress: String?, createdAt: Date, expiresAt: Date) {
        self.requestId = requestId
        nodeId = publicKey.fingerprint
        self.publicKey = publicKey
        self.details = details
        self.sourceAddress = sourceAddress
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        challenges = 0
        codeMismatches = 0
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        requestId = try c.decode(String.self, forKey: .requestId)
        nodeId = try c.decode(Fingerprint.self, forKey: .nodeId)
        publicKey = try c.decode(PublicKey.self, forKey: .publicKey)
        details = try c.decode(NodeDetails.self, forKey: .details)
        sourceAddress = try c.decodeIfPresent(String.self, forKey: .sourceAddress)
        code = try c.decodeIfPresent(String.self, forKey: .code)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        expiresAt = try c.decode(Date.self, forKey: .expiresAt)
        // Absent before version 0.6.
        challenges = try c.decodeIfPresent(Int.self, forKey: .challenges) ?? 0
        codeMismatches = try c.decodeIfPresent(Int.self, forKey: .codeMismatches) ?? 0
        locked = try c.decodeIfPresent(Lock.self, forKey: .locked)
        openClawApp = try c.decodeIfPresent(OpenClawAppClaim.self, forKey: .openClawApp)
        browser = try c.decodeIfPresent(BrowserTier.self, forKey: .browser)
        bootId = try c.decodeIfPresent(String.self, forKey: .bootId)
        bootCreatedNs = try c.decodeIfPresent(Int64.self, forKey: .bootCreatedNs)
    }
}

/// A request that timed out: kept for a while so `approve` can say "expired" rather than "unknown".
public struct ExpiredRequest: Codable, Equatable, Sendable {
    public var requestId: String
    public var nodeId: Fingerprint
    public var displayName: String
    public var createdAt: Date
    public var expiredAt: Date
    /// Pushed out by a newer request when the pending list was full, rather than timed out.
    public var evicted: Bool?

    public init(requestId: String, nodeId: Fingerprint, displayName: String, createdAt: Date, expiredAt: Date, evicted: Bool? = nil) {
        (self.requestId, self.nodeId, self.displayName, self.createdAt, self.expiredAt, self.evicted) = (requestId, nodeId, displayName, createdAt, expiredAt, evicted)
    }
}

/// paired.json
public struct PairedFile: Codable, Equatable, Sendable {
    public static let currentVersion = StateFormat.current.version(.paired)
    public var version = currentVersion
    public var nodes: [PairedNode] = []
    public var blocked: [BlockedKey] = []
    public init() {}
}

/// pending.json
public struct PendingFile: Codable, Equatable, Sendable {
    public static let currentVersion = StateFormat.current.version(.pending)
    public var version = currentVersion
    public var requests: [PendingRequest] = []
    public var expired: [ExpiredRequest] = []
    public init() {}
}
