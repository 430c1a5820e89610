import FoundationEssentials
import Glibc

/// The host's interface addresses: for advertising on one interface (`--bind ADDRESS`) and for
/// the address an invite tells devices to dial.
public enum NetworkInterfaces {
    public struct Address: Sendable, Equatable {
        public let interface: String
        public let index: Int32
        public let address: String
        public let isIPv4: Bool
        public let isLoopback: Bool
        public let isUp: Bool
    }

    public static func addresses() -> [Address] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        return sequence(first: first, next: { $0.pointee.ifa_next }).compactMap { entry in
            guard let sockaddr = entry.pointee.ifa_addr else { return nil }
            let family = Int32(sockaddr.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { return nil }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(sockaddr, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
            let flags = Int32(entry.pointee.ifa_flags)
            return Address(
                interface: String(cString: entry.pointee.ifa_name), index: Int32(if_nametoindex(entry.pointee.ifa_name)),
                address: String(cString: host), isIPv4: family == AF_INET,
                isLoopback: flags & Int32(IFF_LOOPBACK) != 0, isUp: flags & Int32(IFF_UP) != 0)
        }
    }

    /// The index of the interface that carries `address`.
    public static func index(of address: String) -> Int32? {
        addresses().first { $0.address == address && $0.index != 0 }?.index
    }

    /// The first up, non-loopback IPv4 address: usually what a device on the LAN can reach.
    public static func lanAddress() -> String? {
        addresses().first { $0.isIPv4 && $0.isUp && !$0.isLoopback }?.address
    }
}
