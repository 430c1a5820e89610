import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// Which capability opens the canvas relay for which node, and what the relay swaps it for
/// upstream. One grant per node, minted by the core when the node's session starts; it slides
/// on use (as OpenClaw's do), and it goes when the session ends or the node is revoked. Sans I/O:
/// the relay asks, the core grants and revokes (through the driver), tests pass the clock.
///
/// Capabilities are looked up by their SHA-256 and then compared in constant time, so neither a
/// hash table nor `==` tells a guesser how close it came.
package struct CanvasGrants {
    package struct Grant {
        package let node: Fingerprint
        package let capability: [UInt8]
        package var expires: Moment
    }

    /// The upstream capability a node's OpenClaw socket was given (`hello-ok.canvasHostUrl`,
    /// `node.canvas.capability.refresh`): never sent to the LAN.
    package struct Upstream: Equatable {
        package var capability: String
        package init(capability: String) { self.capability = capability }
    }

    package private(set) var byDigest: [[UInt8]: Grant] = [:]
    private var digestByNode: [Fingerprint: [UInt8]] = [:]
    package private(set) var upstream: [Fingerprint: Upstream] = [:]
    private var requests = RateBuckets()

    package var count: Int { byDigest.count }

    /// A grant for `node`, replacing any it had.
    package mutating func grant(_ capability: String, node: Fingerprint, expires: Moment) {
        revoke(node)
        let digest = SHA256.hash(Array(capability.utf8))
        byDigest[digest] = Grant(node: node, capability: Array(capability.utf8), expires: expires)
        digestByNode[node] = digest
    }

    /// The node's grant and its upstream capability go (its session ended, or it was revoked).
    package mutating func revoke(_ node: Fingerprint) {
        if let digest = digestByNode.removeValue(forKey: node) { byDigest[digest] = nil }
        requests.forget(node)
    }

    /// The node's capability, if it holds one (live or lapsed).
    package func capability(of node: Fingerprint) -> String? {
        digestByNode[node].flatMap { byDigest[$0] }.map { String(decoding: $0.capability, as: UTF8.self) }
    }

    package func expiry(of node: Fingerprint) -> Moment? { digestByNode[node].flatMap { byDigest[$0]?.expires } }

    package mutating func setUpstream(_ value: Upstream?, node: Fingerprint) { upstream[node] = value }

    package enum Lookup: Equatable {
        case granted(Fingerprint)
        case unknown
        case expired
        case rateLimited
    }

    /// The node a capability belongs to, if it is live; a hit extends it by `ttl`.
    package mutating func use(_ capability: String, now: Moment, ttl: Double, limits: BridgeSettings.Limits) -> Lookup {
        let presented = Array(capability.utf8)
        let digest = SHA256.hash(presented)
        guard let found = byDigest[digest], Self.constantTimeEqual(found.capability, presented) else { return .unknown }
        guard found.expires > now else {
            revoke(found.node)
            return .expired
        }
        // A capability is a page and its assets, not a firehose: the node's rate applies.
        if case .limited = requests.take(.canvasRequest, node: found.node, limits: limits, now: now) { return .rateLimited }
        byDigest[digest]?.expires = max(found.expires, now.addingTimeInterval(ttl))
        return .granted(found.node)
    }

    /// Grants past their time go (the core's tick).
    package mutating func expire(now: Moment) {
        for (_, grant) in byDigest where grant.expires <= now { revoke(grant.node) }
    }

    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// 18 random bytes in base64url (24 characters, 144 bits): the shape OpenClaw mints, so a
    /// node's relay URL is as long as the gateway's own.
    package static func mint(_ random: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var i = 0
        while i + 3 <= random.count {
            let n = UInt32(random[i]) << 16 | UInt32(random[i + 1]) << 8 | UInt32(random[i + 2])
            for shift in [18, 12, 6, 0] { out.append(alphabet[Int(n >> UInt32(shift) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
    package static let randomBytes = 18
}
