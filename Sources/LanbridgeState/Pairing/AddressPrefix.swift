import Glibc

/// The network a source address belongs to, for limits that one machine could otherwise dodge by
/// taking several addresses: the /24 of an IPv4 address, the /64 of an IPv6 one (an IPv4-mapped
/// IPv6 address counts as IPv4). Anything unparsable is its own prefix.
public struct AddressPrefix: Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ address: String) {
        var v4 = in_addr(), v6 = in6_addr()
        let bare = address.hasPrefix("::ffff:") && address.contains(".") ? String(address.dropFirst(7)) : address
        if inet_pton(AF_INET, bare, &v4) == 1 {
            let b = withUnsafeBytes(of: v4) { Array($0) }
            description = "\(b[0]).\(b[1]).\(b[2]).0/24"
        } else if inet_pton(AF_INET6, bare, &v6) == 1 {
            let b = withUnsafeBytes(of: v6) { Array($0) }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }
            description = groups.joined(separator: ":") + "::/64"
        } else {
            description = address
        }
    }
}
