/// An address a node may dial to reach its bridge: in an invite (`a=`), in `welcome.addresses`,
/// and in what a node remembers (PROTOCOL.md §9.1, §9.3). Only a hint: the pinned key decides
/// which bridge answered, never the address.
public struct ReachableAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// The most a bridge lists, and a node keeps from a list.
    public static let maxCount = 4

    public init(host: String, port: Int) { (self.host, self.port) = (host, port) }

    /// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; nil when the host is not
    /// an IP address or a host name, or the port is not 1-65535.
    public init?(_ text: String, defaultPort: Int) {
        var host = Substring(text), port = defaultPort
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            guard let number = Int(text[text.index(after: colon)...]) else { return nil }
            (host, port) = (text[..<colon], number)
        }
        guard (1...65535).contains(port), let valid = InviteURI.validHost(String(host)) else { return nil }
        self.init(host: valid, port: port)
    }

    /// `host:port`, an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// What kind of network an address belongs to, in the order a bridge prefers to list them.
    public enum Scope: Int, Comparable, Sendable {
        /// RFC 1918 IPv4, IPv6 unique-local (but not a tailnet's): the LAN.
        case lan
        /// Tailscale's CGNAT range `100.64.0.0/10` and its `fd7a:115c:a1e0::/48`.
        case tailnet
        /// Anything else: a public address or a host name.
        case other
        /// Never listed: loopback and link-local (meaningless to another machine).
        case local

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    public var scope: Scope { Self.scope(of: host) }

    public static func scope(of host: String) -> Scope {
        let lower = host.lowercased()
        if let v4 = IPv4(lower) {
            switch (v4.0, v4.1) {
            case (127, _), (169, 254), (0, _): return .local
            case (10, _), (192, 168), (172, 16...31): return .lan
            case (100, 64...127): return .tailnet
            default: return .other
            }
        }
        guard lower.contains(":") else { return lower == "localhost" ? .local : .other }
        if lower == "::1" || lower == "::" || lower.hasPrefix("fe80:") { return .local }
        if lower.hasPrefix("fd7a:115c:a1e0:") { return .tailnet }
        if lower.hasPrefix("fc") || lower.hasPrefix("fd") { return .lan }
        return .other
    }

    /// At most `maxCount`, without repeats and without local ones: `configured` first in its own
    /// order (the admin knows best), then the rest by scope (LAN, tailnet, other), IPv4 before
    /// IPv6, keeping their order otherwise.
    public static func preferred(configured: [ReachableAddress], found: [ReachableAddress]) -> [ReachableAddress] {
        let ranked = found.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            if x.scope != y.scope { return x.scope < y.scope }
            let (x6, y6) = (x.host.contains(":"), y.host.contains(":"))
            return x6 != y6 ? !x6 : a.offset < b.offset
        }.map(\.element)
        var seen = Set<ReachableAddress>(), out: [ReachableAddress] = []
        for address in configured + ranked.filter({ $0.scope != .local }) where out.count < maxCount && seen.insert(address).inserted {
            out.append(address)
        }
        return out
    }

    /// Reads a list a peer sent: entries that are not `host:port` are skipped, the rest capped at
    /// `maxCount` (a longer list is cut, never trusted further).
    public static func list(_ texts: [String]) -> [ReachableAddress] {
        var seen = Set<ReachableAddress>(), out: [ReachableAddress] = []
        for text in texts.prefix(maxCount * 4) {
            guard out.count < maxCount, let address = ReachableAddress(text, defaultPort: 0) else { continue }
            if seen.insert(address).inserted { out.append(address) }
        }
        return out
    }

    private static func IPv4(_ text: String) -> (Int, Int)? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let numbers = parts.compactMap { $0.count <= 3 && $0.allSatisfy(\.isASCII) ? Int($0) : nil }
        guard numbers.count == 4, numbers.allSatisfy({ (0...255).contains($0) }) else { return nil }
        return (numbers[0], numbers[1])
    }
}
