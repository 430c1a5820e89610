import FoundationEssentials
import Glibc
import LanbridgeNet
import NIOCore

/// Whether whoever listens at the gateway's address may hear from the bridge: the listening
/// socket's owner must be one of `allowed`. A local user who binds the gateway's port while the
/// gateway is down gets nothing, not even the upgrade request.
enum GatewayOwner {
    static func check(_ channel: any Channel, allowed: Set<UInt32>) -> EventLoopFuture<String?> {
        if case .unixDomainSocket? = channel.remoteAddress {
            return PeerCredentials.of(channel).map { credentials in
                guard let uid = credentials?.uid else { return "cannot read the gateway socket's owner (SO_PEERCRED)" }
                return verdict(uid, allowed)
            }
        }
        guard let peer = channel.remoteAddress, let local = channel.localAddress else {
            return channel.eventLoop.makeSucceededFuture("the connection has no addresses")
        }
        guard let uid = SocketOwner.uid(peer: peer, local: local) else {
            return channel.eventLoop.makeSucceededFuture("cannot find who listens at \(peer) in the kernel's socket tables")
        }
        return channel.eventLoop.makeSucceededFuture(verdict(uid, allowed))
    }

    private static func verdict(_ uid: UInt32, _ allowed: Set<UInt32>) -> String? {
        guard !allowed.contains(uid) else { return nil }
        return
            "the gateway's socket belongs to \(name(uid)), not to \(allowed.sorted().map(name).joined(separator: " or ")) (gateway.owner): another local user may be squatting on it"
    }

    static func name(_ uid: UInt32) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }
}
