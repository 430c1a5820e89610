import NIOCore
#if canImport(Glibc)
    import Glibc
#endif

/// `struct ucred` from <sys/socket.h> (hidden behind _GNU_SOURCE in Swift's Glibc module): same
/// layout. For a Unix socket, the peer's credentials as of its connect or listen.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32 = 0
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0

    public init() {}

    /// The credentials of a connected Unix socket's peer (SO_PEERCRED), or nil.
    public static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            .map { (credentials: PeerCredentials) in Optional(credentials) }
            .recover { _ in nil }
    }
}
