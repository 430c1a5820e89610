import Foundation
import LanbridgeCrypto
import LanbridgeProtocol

public enum PairingError: Error, Equatable, CustomStringConvertible {
    case alreadyPaired(Fingerprint)
    case blocked(Fingerprint)
    case tooManyPending(limit: Int)
    case unknownRequest(String)
    case requestExpired(String, at: Date)
    case unknownNode(String)
    case invalidInvite
    case codeMismatch(expected: String?, given: String)

    public var description: String {
        switch self {
        case let .alreadyPaired(id): "node \(id) is already paired"
        case let .blocked(id): "node \(id) is blocked"
        case let .tooManyPending(limit): "too many pending pairing requests (limit \(limit)); approve or reject some first"
        case let .unknownRequest(id): "no pending request \(id) (see `lanbridge nodes pending`)"
        case let .requestExpired(id, at): "request \(id) expired at \(at.formatted(.iso8601)); the node must ask again"
        case let .unknownNode(id): "no paired node \(id) (see `lanbridge nodes list`)"
        case .invalidInvite: "unknown, used or expired invite"
        case let .codeMismatch(expected, given):
            expected == nil ? "the node has not shown a code yet; approve without --code or wait" : "code \(given) does not match the node's code"
        }
    }
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
        public static let maxPending = 32
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
    public mutating func requestPairing(key: PublicKey, details: NodeDetails, source: String?, now: Date, timing: Timing = .standard) throws -> PendingRequest {
        if node(withKey: key) != nil { throw PairingError.alreadyPaired(key.fingerprint) }
        if isBlocked(key) { throw PairingError.blocked(key.fingerprint) }
        _ = expire(now: now)
        if let index = pending.requests.firstIndex(where: { $0.publicKey == key }) {
            pending.requests[index].expiresAt = Self.expiry(createdAt: pending.requests[index].createdAt, now: now, timing: timing)
            pending.requests[index].sourceAddress = source
            return pending.requests[index]
        }
        guard pending.requests.count < Limits.maxPending else { throw PairingError.tooManyPending(limit: Limits.maxPending) }
        let request = PendingRequest(requestId: newRequestID(), publicKey: key, details: details, sourceAddress: source,
                                     createdAt: now, expiresAt: Self.expiry(createdAt: now, now: now, timing: timing))
        pending.requests.append(request)
        return request
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
            ExpiredRequest(requestId: $0.requestId, nodeId: $0.nodeId, displayName: $0.details.displayName,
                           createdAt: $0.createdAt, expiredAt: $0.expiresAt)
        }
        pending.expired = Array(pending.expired.suffix(Limits.expiredHistory))
        return gone
    }

    /// Approves a request. With `code`, the request's verification code must match it.
    public mutating func approve(requestId: String, code: String? = nil, access: AccessRules? = nil, now: Date) throws -> PairedNode {
        _ = expire(now: now)
        if let code, let request = request(requestId), request.code != code {
            throw PairingError.codeMismatch(expected: request.code, given: code)
        }
        let request = try takeRequest(requestId, now: now)
        let access = access ?? AccessRules.defaults(forPlatform: request.details.platform)
        let node = PairedNode(publicKey: request.publicKey, details: request.details, pairingMethod: .code,
                              pairedAt: now, firstSeen: request.createdAt, access: access)
        paired.nodes.append(node)
        return node
    }

    public mutating func reject(requestId: String, block: Bool, now: Date) throws -> PendingRequest {
        let request = try takeRequest(requestId, now: now)
        if block, !isBlocked(request.publicKey) {
            paired.blocked.append(BlockedKey(nodeId: request.nodeId, publicKey: request.publicKey,
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
        guard let index = pending.requests.firstIndex(where: { $0.requestId == requestId }) else { return }
        pending.requests[index].code = code
    }

    /// The paired node this request looks like (same display name or device model) under another
    /// key: the operator should know before approving.
    public func keyChange(for request: PendingRequest) -> PairedNode? {
        paired.nodes.first { node in
            node.publicKey != request.publicKey
                && (node.details.displayName == request.details.displayName
                    || (node.details.deviceModel != nil && node.details.deviceModel == request.details.deviceModel))
        }
    }

    public mutating func recordSeen(_ id: Fingerprint, now: Date) {
        guard let index = paired.nodes.firstIndex(where: { $0.nodeId == id }) else { return }
        paired.nodes[index].lastSeen = now
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
