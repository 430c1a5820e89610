import FoundationEssentials
import Glibc
import NIOCore

/// Which local user owns the other end of a loopback TCP connection, asked of the kernel through
/// `NETLINK_SOCK_DIAG` (inet_diag, sock_diag(7)): the client's socket is found by its exact
/// 4-tuple, and its `idiag_uid` is the uid that opened it. Loopback is shared by every user of
/// the machine, so the console binds each login and session to that uid (issue 36).
///
/// nil when it cannot be told: not loopback, the socket is gone, or the kernel refused. Callers
/// refuse then; they never guess.
enum LoopbackPeer {
    // linux/sock_diag.h, linux/inet_diag.h, linux/netlink.h
    static let NETLINK_SOCK_DIAG: Int32 = 4
    static let SOCK_DIAG_BY_FAMILY: UInt16 = 20
    static let NLM_F_REQUEST: UInt16 = 0x1
    static let NLMSG_ERROR: UInt16 = 0x2
    static let nlmsghdrSize = 16
    /// family, protocol, ext, pad, states, then inet_diag_sockid (48 bytes).
    static let inetDiagReqV2Size = 56
    /// In inet_diag_msg: family, state, timer, retrans (4), sockid (48), expires, rqueue, wqueue (12).
    static let uidOffset = 4 + 48 + 12

    /// The uid that owns the peer socket of a connection whose local end is `local` and remote end
    /// is `remote`, both loopback addresses.
    static func uid(local: SocketAddress?, remote: SocketAddress?) -> UInt32? {
        guard let local, let remote, let request = request(client: remote, server: local) else { return nil }
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_SOCK_DIAG)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // sockaddr_nl {nl_family, nl_pad, nl_pid = 0 (the kernel), nl_groups = 0}; Glibc does not
        // import linux/netlink.h.
        var kernel = sockaddr_storage()
        withUnsafeMutableBytes(of: &kernel) { $0.storeBytes(of: sa_family_t(AF_NETLINK), as: sa_family_t.self) }
        let sent = request.withUnsafeBytes { bytes in
            withUnsafePointer(to: &kernel) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, 12) }
            }
        }
        guard sent == request.count else { return nil }
        var reply = [UInt8](repeating: 0, count: 8192)
        let received = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard received >= nlmsghdrSize else { return nil }
        return parse(Array(reply.prefix(received)))
    }

    /// The inet_diag request for the socket whose source is `client` and destination `server`.
    static func request(client: SocketAddress, server: SocketAddress) -> [UInt8]? {
        let family: UInt8
        let source: [UInt8], destination: [UInt8]
        switch (client, server) {
        case let (.v4(c), .v4(s)):
            family = UInt8(AF_INET)
            source = withUnsafeBytes(of: c.address.sin_addr) { Array($0) } + [UInt8](repeating: 0, count: 12)
            destination = withUnsafeBytes(of: s.address.sin_addr) { Array($0) } + [UInt8](repeating: 0, count: 12)
        case let (.v6(c), .v6(s)):
            family = UInt8(AF_INET6)
            source = withUnsafeBytes(of: c.address.sin6_addr) { Array($0) }
            destination = withUnsafeBytes(of: s.address.sin6_addr) { Array($0) }
        default:
            return nil
        }
        guard let sport = client.port, let dport = server.port else { return nil }
        var message: [UInt8] = []
        message.reserveCapacity(nlmsghdrSize + inetDiagReqV2Size)
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { message += $0 } }
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { message += $0 } }
        // nlmsghdr (host order: little-endian on the machines this runs on, checked below)
        u32(UInt32(nlmsghdrSize + inetDiagReqV2Size))
        u16(SOCK_DIAG_BY_FAMILY)
        u16(NLM_F_REQUEST)
        u32(1)  // sequence
        u32(0)  // port ID: the kernel fills it in
        // inet_diag_req_v2
        message += [family, UInt8(IPPROTO_TCP), 0, 0]
        u32(0xFFFF_FFFF)  // every TCP state
        // inet_diag_sockid: ports and addresses in network order
        message += [UInt8(sport >> 8 & 0xFF), UInt8(sport & 0xFF), UInt8(dport >> 8 & 0xFF), UInt8(dport & 0xFF)]
        message += source + destination
        u32(0)  // interface: any
        u32(0xFFFF_FFFF); u32(0xFFFF_FFFF)  // INET_DIAG_NOCOOKIE
        return 1.littleEndian == 1 ? message : nil
    }

    /// The uid in the kernel's answer, or nil for an error or anything short.
    static func parse(_ reply: [UInt8]) -> UInt32? {
        func u16(_ at: Int) -> UInt16 { UInt16(reply[at]) | UInt16(reply[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(reply[at + $1]) << (8 * $1) } }
        guard reply.count >= nlmsghdrSize else { return nil }
        let length = Int(u32(0))
        guard length <= reply.count, u16(4) == SOCK_DIAG_BY_FAMILY, length >= nlmsghdrSize + uidOffset + 4 else { return nil }
        return u32(nlmsghdrSize + uidOffset)
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        switch address {
        case let .v4(a)?: return UInt32(bigEndian: a.address.sin_addr.s_addr) >> 24 == 127
        case let .v6(a)?:
            let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            return bytes == [UInt8](repeating: 0, count: 15) + [1]
        default: return false
        }
    }
}
