import Foundation
import LanbridgeDiscovery
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// Creates an invite and its URI: `lanbridge invite` and the console, one path.
public enum InviteIssuer {
    public struct Issued: Sendable {
        public let uri: InviteURI
        public let expiresAt: Date
    }

    /// Devices dial `ListeningAddress.dialable(host:port:listening:)`. Everything is checked
    /// before the invite is written.
    public static func issue(directory: StateDirectory, name: String?, grant: ApprovalGrant, ttl: TimeInterval,
                             host: String?, port: Int?, listening: [String], actor: String = AuditLog.currentUser) throws -> Issued {
        let (dialHost, dialPort) = ListeningAddress.dialable(host: host, port: port, listening: listening)
        let bridgeKey = try IdentityStore(directory: directory).publicKey(creating: true)
        let now = Date()
        let secret = try PairingStore(directory: directory).update(actor: actor) { $0.createInvite(name: name, grant: grant, ttl: ttl, now: now) }
        let uri = InviteURI(host: dialHost, port: dialPort, bridgeFingerprint: Fingerprint(publicKey: bridgeKey),
                            secret: secret.withUnsafeBytes { Array($0) }, name: name)
        return Issued(uri: uri, expiresAt: now.addingTimeInterval(ttl))
    }
}

/// "host:port" as runtime.json lists addresses: "[::1]:18790" or "127.0.0.1:18790".
public enum ListeningAddress {
    public static func split(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    /// Where devices should dial (invites, wide-area records): `host` if given, else the daemon's
    /// listening address (`listening`, as runtime.json has it) unless it is a wildcard, else this
    /// host's first LAN address; `port` if given, else the daemon's, else the default.
    public static func dialable(host: String?, port: Int?, listening: [String]) -> (host: String, port: Int) {
        let bound = listening.first.flatMap(split)
        let fallbackHost = NetworkInterfaces.lanAddress() ?? InviteURI.validHost(ProcessInfo.processInfo.hostName) ?? "127.0.0.1"
        return (host ?? bound.map(\.host).flatMap { ["0.0.0.0", "::"].contains($0) ? nil : $0 } ?? fallbackHost,
                port ?? bound?.port ?? BridgeConfiguration.defaultPort)
    }
}
