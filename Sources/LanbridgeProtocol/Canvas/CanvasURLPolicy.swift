/// What a canvas may load: the bridge checks `canvas.present` and `canvas.navigate` URLs before a
/// node sees them, so the agent cannot use a phone's webview to reach the phone's LAN.
///
/// Allowed by default: the node's own canvas relay, `about:blank`, and `https:` to public hosts.
/// Refused by default: every other scheme (`http:`, `file:`, `javascript:`, `data:`…), URLs with
/// credentials, and hosts that are loopback, link-local, private (RFC 1918, CGNAT, ULA), multicast
/// or reserved, single-label names and the local-only suffixes (`.local`, `.localhost`, `.internal`,
/// `.lan`, `.home.arpa`). Rules widen or narrow it: a matching deny (the node's, then the config's)
/// refuses, a matching allow permits, and only then the defaults apply.
///
/// A public name that resolves to a private address (DNS rebinding) is out of the bridge's sight:
/// the node resolves it. The relay origin and the node's own pinning are what protect the canvas.
public struct CanvasURLPolicy: Sendable, Equatable {
    public var allow: [OriginPattern]
    public var deny: [OriginPattern]

    public init(allow: [OriginPattern] = [], deny: [OriginPattern] = []) {
        (self.allow, self.deny) = (allow, deny)
    }

    public enum Verdict: Equatable, Sendable {
        case allow
        /// Why, and the origin to name in the refusal (nil when the URL has none).
        case refuse(reason: String, origin: String?)
    }

    /// `relayOrigin`: the node's canvas relay (`https://host:port`), always allowed.
    /// `node`: the node's own rules, tried before these.
    public func decide(_ text: String, relayOrigin: String?, node: CanvasURLPolicy = .init()) -> Verdict {
        let url: CanvasURL
        do { url = try CanvasURL(text) } catch { return .refuse(reason: "not a URL a canvas may load (\(error))", origin: nil) }
        if url.scheme == "about" { return url.opaque == "blank" ? .allow : .refuse(reason: "only about:blank", origin: nil) }
        guard let host = url.host, let origin = url.origin else {
            return .refuse(reason: "\(url.scheme): URLs are never loaded in a canvas", origin: nil)
        }
        guard url.scheme == "http" || url.scheme == "https" else { return .refuse(reason: "\(url.scheme): is not a page", origin: origin) }
        guard !url.hasCredentials else { return .refuse(reason: "a URL with a user name or password", origin: origin) }
        if let relayOrigin, origin == relayOrigin { return .allow }
        if node.deny.contains(where: { $0.matches(url) }) { return .refuse(reason: "denied for this node", origin: origin) }
        if deny.contains(where: { $0.matches(url) }) { return .refuse(reason: "denied by canvas.denyOrigins", origin: origin) }
        if node.allow.contains(where: { $0.matches(url) }) || allow.contains(where: { $0.matches(url) }) { return .allow }
        guard url.scheme == "https" else { return .refuse(reason: "plain http: is refused by default", origin: origin) }
        if let local = Self.localReason(host) { return .refuse(reason: local, origin: origin) }
        return .allow
    }

    /// Why a host is on this side of the internet, or nil for a public one.
    public static func localReason(_ host: CanvasURL.Host) -> String? {
        switch host {
        case let .ipv4(a): return ipv4Reason(a)
        case let .ipv6(p):
            if p.allSatisfy({ $0 == 0 }) { return "the unspecified address" }
            if p[0..<7].allSatisfy({ $0 == 0 }), p[7] == 1 { return "a loopback address" }
            // IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and the old compatible form: their IPv4 decides.
            let embedded = UInt32(p[6]) << 16 | UInt32(p[7])
            if p[0..<5].allSatisfy({ $0 == 0 }), p[5] == 0xFFFF { return ipv4Reason(embedded) }
            if p[0] == 0x64, p[1] == 0xFF9B, p[2..<6].allSatisfy({ $0 == 0 }) { return ipv4Reason(embedded) }
            if p[0..<6].allSatisfy({ $0 == 0 }) { return "an IPv4-compatible IPv6 address" }
            if p[0] & 0xFE00 == 0xFC00 { return "a private (ULA) address" }
            if p[0] & 0xFFC0 == 0xFE80 { return "a link-local address" }
            if p[0] & 0xFFC0 == 0xFEC0 { return "a site-local address" }
            if p[0] & 0xFF00 == 0xFF00 { return "a multicast address" }
            if p[0] == 0x2001, p[1] == 0x0DB8 { return "a documentation address" }
            return nil
        case let .name(name):
            if !name.contains(".") { return "a single-label name (the LAN's, not the internet's)" }
            for suffix in ["localhost", "local", "internal", "lan", "home.arpa", "intranet", "corp", "private"] where name == suffix || name.hasSuffix("." + suffix) {
                return "a .\(suffix) name"
            }
            return nil
        }
    }

    static func ipv4Reason(_ a: UInt32) -> String? {
        func within(_ base: UInt32, _ bits: Int) -> Bool { bits == 0 || a >> (32 - bits) == base >> (32 - bits) }
        if within(0x7F00_0000, 8) { return "a loopback address" }
        if within(0, 8) { return "a this-network address" }
        if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return "a private (RFC 1918) address" }
        if within(0x6440_0000, 10) { return "a shared (CGNAT, tailnet) address" }
        if within(0xA9FE_0000, 16) { return "a link-local address" }
        if within(0xC000_0000, 24) || within(0xC612_0000, 15) || within(0xC000_0200, 24) || within(0xC633_6400, 24) || within(0xCB00_7100, 24) {
            return "a reserved address"
        }
        if within(0xE000_0000, 4) { return "a multicast address" }
        if within(0xF000_0000, 4) { return "a reserved address" }
        return nil
    }
}

/// An origin in a rule: `https://example.com`, `http://192.168.1.20:8080`, or `https://*.example.com`
/// (the name and every name under it). Parsed by `CanvasURL`, so a rule and a URL are read alike.
public struct OriginPattern: Sendable, Equatable, CustomStringConvertible {
    public let scheme: String
    public let host: CanvasURL.Host
    public let port: Int
    /// `*.` before the name.
    public let subdomains: Bool

    public var description: String {
        "\(scheme)://\(subdomains ? "*." : "")\(host)" + (port == CanvasURL.defaultPort(scheme) ? "" : ":\(port)")
    }

    /// Whether a rule's text is an origin rather than a command pattern (which has no colon).
    public static func isOrigin(_ text: String) -> Bool { firstIndex(of: Array("://".utf8), in: Array(text.utf8)) != nil }

    public init(_ text: String) throws(CanvasURL.Invalid) {
        // `scheme://*.name`: the wildcard is taken out before the one URL reader reads the rest.
        var bytes = Array(text.utf8)
        guard let separator = Self.firstIndex(of: Array("://".utf8), in: bytes) else { throw CanvasURL.Invalid(reason: "an origin is http(s)://host[:port]") }
        let authority = separator + 3
        let subdomains = bytes[authority...].starts(with: Array("*.".utf8))
        if subdomains { bytes.removeSubrange(authority..<(authority + 2)) }
        // An origin has nothing after the port: a path would suggest a narrower rule than it is.
        guard !bytes[authority...].contains(where: { [0x2F, 0x3F, 0x23, 0x5C].contains($0) }) else {
            throw CanvasURL.Invalid(reason: "an origin has no path, query or fragment")
        }
        let url = try CanvasURL(String(decoding: bytes, as: UTF8.self))
        guard url.scheme == "http" || url.scheme == "https", let host = url.host, let port = url.port, !url.hasCredentials else {
            throw CanvasURL.Invalid(reason: "an origin is http(s)://host[:port]")
        }
        if subdomains, case .name = host {} else if subdomains { throw CanvasURL.Invalid(reason: "*. goes before a name") }
        (self.scheme, self.host, self.port, self.subdomains) = (url.scheme, host, port, subdomains)
    }

    static func firstIndex(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    public func matches(_ url: CanvasURL) -> Bool {
        guard url.scheme == scheme, url.port == port, let other = url.host else { return false }
        if other == host { return true }
        guard subdomains, case let .name(mine) = host, case let .name(theirs) = other else { return false }
        return theirs.hasSuffix("." + mine)
    }
}
