import Glibc

/// DNS rebinding's defence for the daemon's HTTP listener: a page on an attacker's site can point
/// its own host name at 127.0.0.1, but its requests still carry that name in `Host`. Only a name
/// that cannot be rebound is served: `localhost` or an IP literal, with the port the request came in on.
public enum HostCheck {
    /// Whether `host` (the request's `Host` header) names this listener, on `port`.
    public static func allows(_ host: String?, port: Int) -> Bool {
        guard let host, let (name, bracketed, given) = split(host), given == port else { return false }
        if bracketed { return parses(name, family: AF_INET6) }
        return name.lowercased() == "localhost" || parses(name, family: AF_INET)
    }

    /// `name:port` or `[v6]:port` (RFC 3986: an IPv6 literal always has brackets); nil without a
    /// port made of digits only (our port is never a scheme's default).
    private static func split(_ host: String) -> (name: String, bracketed: Bool, port: Int)? {
        let name: Substring, rest: Substring, bracketed: Bool
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            (name, rest, bracketed) = (host[host.index(after: host.startIndex)..<close], host[host.index(after: close)...], true)
        } else if let colon = host.firstIndex(of: ":") {
            (name, rest, bracketed) = (host[..<colon], host[colon...], false)
        } else {
            return nil
        }
        let digits = rest.dropFirst()
        guard rest.first == ":", !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(digits)
        else { return nil }
        return (String(name), bracketed, port)
    }

    private static func parses(_ name: String, family: Int32) -> Bool {
        var address = in6_addr()  // room for either family
        return inet_pton(family, name, &address) == 1
    }
}
