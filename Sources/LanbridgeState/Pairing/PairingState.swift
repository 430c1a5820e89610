import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

public enum PairingError: Error, Equatable, CustomStringConvertible {
    case alreadyPaired(Fingerprint)
    case blocked(Fingerprint)
    case unknownRequest(String)
    case requestExpired(String, at: Date)
    case unknownNode(String)
    case invalidInvite
    case codeMismatch(expected: String?, given: String)
    case tooManyFromAddress(String, limit: Int)
    case requestLocked(String, PendingRequest.Lock)
    case notRevealed(String)
    case verificationRequired(String)
    case noSuchRule(String, String, Fingerprint)
    /// One of OpenClaw's apps: the start of the fingerprint the operator typed is not the certificate's.
    case fingerprintMismatch(given: String)
    case fingerprintRequired(String)
    /// The request's name is a paired device's under a new key: replace that device, or add a second.
    case keyChangeUndecided(String, name: String, previous: Fingerprint)
    /// A node paired through an unverified page (a self-signed certificate): more than display
    /// needs the operator to say they know that (issue 64, tier 3).
    case unverifiedPage(Fingerprint, pattern: String)

    public var description: String {
        switch self {
        case let .alreadyPaired(id): "node \(id) is already paired"
        case let .blocked(id): "node \(id) is blocked"
        case let .unknownRequest(id): "no pending request \(id) (see `lanbridge nodes pending`)"
        case let .requestExpired(id, at): "request \(id) expired at \(ISO8601Text.string(at)); the node must ask again"
        case let .unknownNode(id): "no paired node \(id) (see `lanbridge nodes list`)"
        case .invalidInvite: "unknown, used or expired invite"
        case let .codeMismatch(_, given): "code \(given) does not match the node's code (recorded in the audit log)"
        case let .tooManyFromAddress(address, limit): "\(address) already has \(limit) pending requests; approve or reject those first"
        case let .requestLocked(id, lock): "request \(id) can never be approved: \(lock.explanation); reject it (`lanbridge nodes reject \(id)`) and have the device start over"
        case let .notRevealed(id): "request \(id) has no code yet: the device has not completed the code exchange; wait for it to show a code"
        case let .noSuchRule(pattern, list, id): "node \(id) has no \(list) rule \(pattern) (see `lanbridge nodes describe \(id)`)"
        case let .verificationRequired(id):
            "request \(id) was made by code: pass --code with the code the device shows, or --unverified to approve without comparing (a man in the middle would pass)"
        case let .fingerprintMismatch(given):
            "\(given) is not the start of the certificate fingerprint this bridge showed the app (recorded in the audit log): do not approve it; "
                + "the app may be talking to someone else"
        case let .keyChangeUndecided(id, name, previous):
            "request \(id) looks like the paired \(name) (\(previous)) under a new key (KEY CHANGED): check with its owner, then pass "
                + "--replace (the old key is revoked, its rules kept) or --add (both stay paired)"
        case let .unverifiedPage(id, pattern):
            "node \(id) paired through an unverified page (a self-signed certificate): whoever sat between it and the bridge may hold its key; "
                + "\(pattern) is more than display. Pass --unverified-page if you mean it, or pair it again through the bridge CA"
        case let .fingerprintRequired(id):
            "request \(id) is one of OpenClaw's apps: pass --fingerprint with the first 6 characters of the certificate fingerprint the app shows, "
                + "or --unverified to approve without comparing (a man in the middle would pass)"
        }
    }
}

/// Approving a request that looks like a paired device under a new key (KEY CHANGED): the new key
/// takes the old one's place (revoked, its rules kept for the new one), or it is a second device.
public enum KeyChangeChoice: String, Sendable, CaseIterable {
    case replace, add
}

/// The rules of pairing over the contents of paired.json and pending.json. Pure: the clock is an
/// argument, so every rule is testable without files or waiting.
public struct PairingState: Equatable, Sendable {
    /// How long requests wait. The daemon can shorten them (tests do); the CLI only reads the
    /// `expiresAt` the daemon stored, so it never needs to know.
    public struct Timing: Sendable, Equatable {
        /// A request lives this long after the node's last sign of life...
        public var timeToLive: TimeInterval = 5 * 60
        /// ...but never longer than this after it was made.
        public var hardCap: TimeInterval = 15 * 60
        public init() {}
        public static let standard = Timing()
    }

    public enum Limits {
        /// Requests waiting at once. At the cap a new request evicts one (see `requestPairing`)
        /// rather than being refused, so a flood cannot keep a real device from asking.
        public static let maxPending = 32
        /// Requests waiting at once from one source address: over it, refused.
        public static let maxPendingPerAddress = 4
        /// ... and from one /24 (IPv4) or /64 (IPv6): over it, one from that prefix is evicted.
        public static let maxPendingPerPrefix = 16
        /// Code challenges (fresh bridge nonces, so fresh codes) one request may have. Each is one
        /// 10⁻⁶ chance for a man in the middle (PROTOCOL.md §7), so a request's lifetime gives at
        /// most `challengesPerRequest × 10⁻⁶`.
        public static let challengesPerRequest = 3
        /// Expired requests remembered for clear errors.
        public static let expiredHistory = 64
    }

    public var paired: PairedFile
    public var pending: PendingFile
    public var invites: InvitesFile

    public init(paired: PairedFile = .init(), pending: PendingFile = .init(), invites: InvitesFile = .init()) {
        self.paired = paired
        self.pending = pending
        self.invites = invites
    }

    public func node(_ id: Fingerprint) -> PairedNode? { paired.nodes.first { $0.nodeId == id } }
    public func node(withKey key: PublicKey) -> PairedNode? { paired.nodes.first { $0.publicKey == key } }
    public func request(_ id: String) -> PendingRequest? { pending.requests.first { $0.requestId == id.lowercased() } }
    public func isBlocked(_ key: PublicKey) -> Bool { paired.blocked.contains { $0.publicKey == key } }

    /// Files a request, or returns the existing one for the same key (refreshed), so a node that
    /// retries keeps its request ID and an approval never races the retry.
    ///
    /// Caps: `maxPendingPerAddress` per source address (refused); `maxPendingPerPrefix` per /24 or
    /// /64 and `maxPending` in all, where the new request evicts one instead: a locked request
    /// first, else the oldest from the address holding the most requests in that scope. A flood
    /// from many addresses thus churns through its own requests, and never locks a device out.
    public mutating func requestPairing(key: PublicKey, details: NodeDetails, source: String?, now: Date, timing: Timing = .standard) throws -> PendingRequest {
        if node(withKey: key) != nil { throw PairingError.alreadyPaired(key.fingerprint) }
        if isBlocked(key) { throw PairingError.blocked(key.fingerprint) }
        _ = expire(now: now)
        if let index = pending.requests.firstIndex(where: { $0.publicKey == key }) {
            // A locked request is not kept alive: it runs out, and the node starts over.
            guard pending.requests[index].locked == nil else { return pending.requests[index] }
            pending.requests[index].expiresAt = Self.expiry(createdAt: pending.requests[index].createdAt, now: now, timing: timing)
            pending.requests[index].sourceAddress = source
            return pending.requests[index]
        }
        if let source {
            let fromAddress = pending.requests.filter { $0.sourceAddress == source }.count
            guard fromAddress < Limits.maxPendingPerAddress else { throw PairingError.tooManyFromAddress(source, limit: Limits.maxPendingPerAddress) }
            let prefix = AddressPrefix(source)
            let samePrefix = pending.requests.filter { $0.sourceAddress.map(AddressPrefix.init) == prefix }
            if samePrefix.count >= Limits.maxPendingPerPrefix { evictOne(of: samePrefix, now: now) }
        }
        if pending.requests.count >= Limits.maxPending { evictOne(of: pending.requests, now: now) }
        let request = PendingRequest(
            requestId: newRequestID(), publicKey: key, details: details, sourceAddress: source,
            createdAt: now, expiresAt: Self.expiry(createdAt: now, now: now, timing: timing))
        pending.requests.append(request)
        return request
    }

    /// One of OpenClaw's apps connected with a key lanbridge does not know: files or refreshes its
    /// request, which the operator approves without a code (the app shows none).
    public mutating func requestAppPairing(
        _ claim: OpenClawAppClaim, key: PublicKey, details: NodeDetails, source: String?, now: Date,
        timing: Timing = .standard
    ) throws -> PendingRequest {
        let request = try requestPairing(key: key, details: details, source: source, now: now, timing: timing)
        guard let index = pending.requests.firstIndex(where: { $0.requestId == request.requestId }) else { return request }
        pending.requests[index].openClawApp = claim
        pending.requests[index].details = details
        return pending.requests[index]
    }

    /// A node asks for a code challenge (a `pair.request`): files or refreshes its request and
    /// counts the challenge. The code of an earlier challenge is void from now on. Past
    /// `challengesPerRequest` the request is locked instead, for good.
    /// `browser`: the browser door it came through, if it did (the last challenge's door counts).
    public mutating func challenge(
        key: PublicKey, details: NodeDetails, source: String?, browser: BrowserTier? = nil, now: Date, timing: Timing = .standard
    ) throws -> PendingRequest {
        var request = try requestPairing(key: key, details: details, source: source, now: now, timing: timing)
        guard let index = pending.requests.firstIndex(where: { $0.requestId == request.requestId }) else { return request }
        pending.requests[index].browser = browser
        if request.locked == nil, request.challenges >= Limits.challengesPerRequest { pending.requests[index].locked = .tooManyChallenges }
        if pending.requests[index].locked == nil {
            pending.requests[index].challenges += 1
            pending.requests[index].code = nil
        }
        request = pending.requests[index]
        return request
    }

    /// The node's revealed nonce did not match its commitment: the request is locked.
    public mutating func commitmentFailed(requestId: String) {
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId.lowercased() }) else { return }
        pending.requests[index].locked = .commitmentFailed
        pending.requests[index].code = nil
    }

    /// Rejects every request from `address` at once (a flood from one machine).
    public mutating func reject(from address: String, block: Bool, now: Date) -> [PendingRequest] {
        _ = expire(now: now)
        let matching = pending.requests.filter { $0.sourceAddress == address }
        for request in matching { _ = try? reject(requestId: request.requestId, block: block, now: now) }
        return matching
    }

    private mutating func evictOne(of scope: [PendingRequest], now: Date) {
        let counts = Dictionary(scope.map { ($0.sourceAddress ?? "", 1) }, uniquingKeysWith: +)
        let victim =
            scope.first { $0.locked != nil }
            ?? scope.min { a, b in
                let (ca, cb) = (counts[a.sourceAddress ?? ""] ?? 0, counts[b.sourceAddress ?? ""] ?? 0)
                return ca != cb ? ca > cb : a.createdAt < b.createdAt
            }
        guard let victim else { return }
        pending.requests.removeAll { $0.requestId == victim.requestId }
        pending.expired.append(
            ExpiredRequest(
                requestId: victim.requestId, nodeId: victim.nodeId, displayName: victim.details.displayName,
                createdAt: victim.createdAt, expiredAt: now, evicted: true))
        pending.expired = Array(pending.expired.suffix(Limits.expiredHistory))
    }

    /// Keeps a request alive while its node stays connected, up to the hard cap.
    public mutating func refresh(requestId: String, now: Date, timing: Timing = .standard) throws {
        _ = expire(now: now)
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId.lowercased() }) else {
            throw missingRequest(requestId)
        }
        pending.requests[index].expiresAt = Self.expiry(createdAt: pending.requests[index].createdAt, now: now, timing: timing)
    }

    /// Moves requests past their expiry to the expired list and returns them, so callers can tell
    /// the waiting node and write the audit log: expiry is recorded, never silent.
    public mutating func expire(now: Date) -> [PendingRequest] {
        invites.invites.removeAll { $0.expiresAt <= now }
        let (gone, kept) = (pending.requests.filter { $0.expiresAt <= now }, pending.requests.filter { $0.expiresAt > now })
        guard !gone.isEmpty else { return [] }
        pending.requests = kept
        pending.expired += gone.map {
            ExpiredRequest(
                requestId: $0.requestId, nodeId: $0.nodeId, displayName: $0.details.displayName,
                createdAt: $0.createdAt, expiredAt: $0.expiresAt)
        }
        pending.expired = Array(pending.expired.suffix(Limits.expiredHistory))
        return gone
    }

    /// Approves a request. The request must have a code (the device finished the exchange) and
    /// not be locked. With `code`, the request's code must match it; a mismatch is counted on the
    /// request (the state changes even though this throws: keep it, so the audit log has it).
    /// Without `code`, `unverified` must say that the operator knowingly skips the comparison.
    public mutating func approve(requestId: String, code: String? = nil, unverified: Bool = false, access: AccessRules? = nil, now: Date) throws -> PairedNode {
        _ = expire(now: now)
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId.lowercased() }) else { throw missingRequest(requestId) }
        let request = pending.requests[index]
        if let lock = request.locked { throw PairingError.requestLocked(request.requestId, lock) }
        if let app = request.openClawApp {
            // No code exists: the operator's check is the TLS fingerprint the app showed, whose
            // first 6 characters `code` then holds (compared, as the console does; issue 48 §6).
            if let shown = code {
                let typed = shown.lowercased()
                guard typed.utf8.count == 6, typed.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                    let expected = app.tlsSha256, expected.hasPrefix(typed)
                else {
                    pending.requests[index].codeMismatches += 1
                    throw PairingError.fingerprintMismatch(given: String(shown.prefix(16)))
                }
            } else if !unverified {
                throw PairingError.fingerprintRequired(request.requestId)
            }
            pending.requests.remove(at: index)
            var node = PairedNode(
                publicKey: request.publicKey, details: request.details, pairingMethod: .openClawApp,
                pairedAt: now, firstSeen: request.createdAt, access: access ?? AccessRules.defaults(forPlatform: request.details.platform))
            node.openClawApp = app
            if code == nil { node.unverified = true }
            paired.nodes.append(node)
            return node
        }
        guard let expected = request.code else { throw PairingError.notRevealed(request.requestId) }
        if let code {
            guard code == expected else {
                pending.requests[index].codeMismatches += 1
                throw PairingError.codeMismatch(expected: expected, given: code)
            }
        } else if !unverified {
            throw PairingError.verificationRequired(request.requestId)
        }
        pending.requests.remove(at: index)
        let access = access ?? AccessRules.defaults(forPlatform: request.platformForDefaults)
        var node = PairedNode(
            publicKey: request.publicKey, details: request.details, pairingMethod: request.browser?.pairingMethod ?? .code,
            pairedAt: now, firstSeen: request.createdAt, access: access)
        if code == nil { node.unverified = true }
        paired.nodes.append(node)
        return node
    }

    public mutating func reject(requestId: String, block: Bool, now: Date) throws -> PendingRequest {
        let request = try takeRequest(requestId, now: now)
        if block, !isBlocked(request.publicKey) {
            paired.blocked.append(
                BlockedKey(
                    nodeId: request.nodeId, publicKey: request.publicKey,
                    displayName: request.details.displayName, blockedAt: now))
        }
        return request
    }

    public mutating func revoke(nodeId: String) throws -> PairedNode {
        guard let id = Fingerprint(nodeId), let index = paired.nodes.firstIndex(where: { $0.nodeId == id }) else {
            throw PairingError.unknownNode(nodeId)
        }
        return paired.nodes.remove(at: index)
    }

    /// Records the code both screens show, once the node has revealed its nonce.
    public mutating func setCode(_ code: String, requestId: String) {
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId.lowercased() }), pending.requests[index].locked == nil else { return }
        pending.requests[index].code = code
    }

    /// The paired node whose display name looks like this request's (`NameSkeleton`) under another
    /// key: the operator should know before approving. A shared device model alone is no sign.
    public func keyChange(for request: PendingRequest) -> PairedNode? {
        let skeleton = NameSkeleton.of(request.details.displayName)
        return paired.nodes.first { $0.publicKey != request.publicKey && NameSkeleton.of($0.details.displayName) == skeleton }
    }

    /// Other pending requests whose names look like this one's.
    public func sameName(as request: PendingRequest) -> [PendingRequest] {
        let skeleton = NameSkeleton.of(request.details.displayName)
        return pending.requests.filter { $0.requestId != request.requestId && NameSkeleton.of($0.details.displayName) == skeleton }
    }

    public mutating func recordSeen(_ id: Fingerprint, now: Date) {
        recordSeen([id], now: now)
    }

    /// The nodes that were connected until `now` (the bridge stops, or the batch of the last
    /// minute): one pass over the paired nodes, however many there are (one search per node was
    /// quadratic, 2 s of a 10,000-node stop).
    public mutating func recordSeen(_ ids: Set<Fingerprint>, now: Date) {
        guard !ids.isEmpty else { return }
        for index in paired.nodes.indices where ids.contains(paired.nodes[index].nodeId) { paired.nodes[index].lastSeen = now }
    }

    // MARK: - Helpers

    static func expiry(createdAt: Date, now: Date, timing: Timing) -> Date {
        min(now.addingTimeInterval(timing.timeToLive), createdAt.addingTimeInterval(timing.hardCap))
    }

    private mutating func takeRequest(_ requestId: String, now: Date) throws -> PendingRequest {
        _ = expire(now: now)
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId.lowercased() }) else {
            throw missingRequest(requestId)
        }
        return pending.requests.remove(at: index)
    }

    private func missingRequest(_ requestId: String) -> PairingError {
        if let expired = pending.expired.last(where: { $0.requestId == requestId.lowercased() }) {
            return .requestExpired(expired.requestId, at: expired.expiredAt)
        }
        return .unknownRequest(requestId)
    }

    /// 8 lowercase Crockford base32 characters (40 random bits): short enough to type over SSH.
    private func newRequestID() -> String {
        let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz")
        while true {
            let id = String(SecureRandom.bytes(8).map { alphabet[Int($0 & 31)] })
            let taken = pending.requests.contains { $0.requestId == id } || pending.expired.contains { $0.requestId == id }
            if !taken { return id }
        }
    }
}
