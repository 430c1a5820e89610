/// The parts of a URL the canvas policy decides on (scheme, host, port), read the way a browser
/// reads them (the WHATWG URL Standard's host parser), so the bridge and the node's webview cannot
/// disagree on where a URL goes: `\` counts as `/`, extra slashes are skipped, a host is
/// percent-decoded and lowercased, a trailing dot is dropped, and a host that ends in a number is
/// an IPv4 address in any of its forms (`2130706433`, `0x7f.1`, `017700000001`).
///
/// Stricter than a browser where that is safer: a URL with a control character, a space or a
/// non-ASCII host (IDNA is not done here) does not parse, and so is refused.
public struct CanvasURL: Equatable, Sendable {
    public enum Host: Equatable, Sendable, CustomStringConvertible {
        case ipv4(UInt32)
        /// Eight 16-bit pieces.
        case ipv6([UInt16])
        /// A lowercase domain name, without a trailing dot.
        case name(String)

        public var description: String {
            switch self {
            case let .ipv4(a): "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)"
            case let .ipv6(pieces): "[" + pieces.map { String($0, radix: 16) }.joined(separator: ":") + "]"
            case let .name(name): name
            }
        }
    }

    /// Lowercase, without the colon.
    public let scheme: String
    /// Nil for URLs without an authority (`about:blank`, `data:…`, `javascript:…`).
    public let host: Host?
    /// The port, the scheme's default when none is written (80, 443); nil without a host.
    public let port: Int?
    /// `user:password@` was present.
    public let hasCredentials: Bool
    /// What follows the scheme's colon for URLs without a host (`blank` in `about:blank`).
    public let opaque: String

    /// `scheme://host:port`, ports written only when not the default; nil without a host.
    public var origin: String? {
        guard let host, let port else { return nil }
        return "\(scheme)://\(host)" + (port == Self.defaultPort(scheme) ? "" : ":\(port)")
    }

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    public static let maxLength = 8192

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    public init(_ text: String) throws(Invalid) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maxLength else { throw Invalid(reason: "longer than \(Self.maxLength) bytes") }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { throw Invalid(reason: "a control character or space") }
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, Self.isAlpha(bytes[0]),
            bytes[1..<colon].allSatisfy({ Self.isAlpha($0) || Self.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else {
            throw Invalid(reason: "no scheme")
        }
        scheme = String(decoding: bytes[..<colon].map { $0 | (Self.isAlpha($0) ? 0x20 : 0) }, as: UTF8.self)
        let rest = bytes[(colon + 1)...]
        guard Self.defaultPort(scheme) != nil else {
            (host, port, hasCredentials, opaque) = (nil, nil, false, String(decoding: rest, as: UTF8.self))
            return
        }
        opaque = ""
        // Special schemes: any run of / and \ introduces the authority.
        var start = rest.startIndex
        while start < rest.endIndex, rest[start] == 0x2F || rest[start] == 0x5C { start += 1 }
        var end = start
        while end < rest.endIndex, ![0x2F, 0x5C, 0x3F, 0x23].contains(rest[end]) { end += 1 }
        var authority = rest[start..<end]
        hasCredentials = authority.contains(UInt8(ascii: "@"))
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        let hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw Invalid(reason: "an unclosed IPv6 literal") }
            hostBytes = authority[authority.startIndex...close]
            let after = authority[(close + 1)...]
            if let first = after.first {
                guard first == UInt8(ascii: ":") else { throw Invalid(reason: "bytes after an IPv6 literal") }
                portBytes = after.dropFirst()
            }
        } else if let portColon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<portColon]
            portBytes = authority[(portColon + 1)...]
        } else {
            hostBytes = authority
        }
        guard !hostBytes.isEmpty else { throw Invalid(reason: "no host") }
        host = try Self.host(hostBytes)
        if portBytes.isEmpty {
            port = Self.defaultPort(scheme)
        } else {
            guard portBytes.count <= 5, portBytes.allSatisfy(Self.isDigit),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), value <= 65535
            else { throw Invalid(reason: "a bad port") }
            port = value
        }
    }

    // MARK: - Hosts (WHATWG "host parsing", special schemes)

    static func host(_ bytes: ArraySlice<UInt8>) throws(Invalid) -> Host {
        if bytes.first == UInt8(ascii: "[") {
            guard bytes.last == UInt8(ascii: "]"), let pieces = ipv6(bytes.dropFirst().dropLast()) else { throw Invalid(reason: "a bad IPv6 literal") }
            return .ipv6(pieces)
        }
        let decoded = try percentDecoded(bytes)
        guard decoded.allSatisfy({ $0 < 0x80 }) else { throw Invalid(reason: "a non-ASCII host (write it in punycode)") }
        var lower = decoded.map { isAlpha($0) ? $0 | 0x20 : $0 }
        // Forbidden domain code points, after decoding (`%2F` is no way round them).
        let forbidden: Set<UInt8> = [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x23, 0x25, 0x2F, 0x3A, 0x3C, 0x3E, 0x3F, 0x40, 0x5B, 0x5C, 0x5D, 0x5E, 0x7C, 0x7F]
        guard !lower.contains(where: { forbidden.contains($0) || $0 < 0x20 }) else { throw Invalid(reason: "a forbidden character in the host") }
        guard !lower.isEmpty else { throw Invalid(reason: "no host") }
        if endsInANumber(lower) {
            guard let address = ipv4(lower) else { throw Invalid(reason: "a host that ends in a number but is no IPv4 address") }
            return .ipv4(address)
        }
        if lower.last == UInt8(ascii: ".") { lower.removeLast() }
        guard !lower.isEmpty, !lower.contains(where: { $0 == 0x2E }) || !lower.split(separator: 0x2E, omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
            throw Invalid(reason: "an empty label in the host")
        }
        return .name(String(decoding: lower, as: UTF8.self))
    }

    static func percentDecoded(_ bytes: ArraySlice<UInt8>) throws(Invalid) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else {
                    throw Invalid(reason: "a bad percent-encoding in the host")
                }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// The last label (ignoring one trailing dot) is all digits, or `0x` and hex digits.
    static func endsInANumber(_ host: [UInt8]) -> Bool {
        var labels = host.split(separator: 0x2E, omittingEmptySubsequences: false)
        if labels.last?.isEmpty == true, labels.count > 1 { labels.removeLast() }
        guard let last = labels.last, !last.isEmpty else { return false }
        if last.allSatisfy(isDigit) { return true }
        let body = last.dropFirst(2)
        return last.count >= 2 && last.first == UInt8(ascii: "0") && (last[last.startIndex + 1] | 0x20) == UInt8(ascii: "x") && body.allSatisfy { hexValue($0) != nil }
    }

    /// WHATWG IPv4 parsing: 1–4 parts in decimal, octal (leading 0) or hex (0x); the last part
    /// fills the bytes the others left.
    static func ipv4(_ host: [UInt8]) -> UInt32? {
        var parts = host.split(separator: 0x2E, omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true, parts.count > 1 { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard !part.isEmpty else { return nil }
            var digits = part[...]
            var radix: UInt64 = 10
            if digits.count >= 2, digits.first == UInt8(ascii: "0"), (digits[digits.startIndex + 1] | 0x20) == UInt8(ascii: "x") {
                radix = 16
                digits = digits.dropFirst(2)
            } else if digits.count >= 2, digits.first == UInt8(ascii: "0") {
                radix = 8
                digits = digits.dropFirst()
            }
            var value: UInt64 = 0
            for byte in digits {
                guard let d = hexValue(byte).map(UInt64.init), d < radix else { return nil }
                value = value * radix + d
                if value > UInt64(UInt32.max) { return nil }
            }
            numbers.append(value)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { return nil }
        let last = numbers[numbers.count - 1]
        guard last < (UInt64(1) << (8 * (5 - numbers.count))) else { return nil }
        var address = last
        for (i, n) in numbers.dropLast().enumerated() { address += n << (8 * (3 - i)) }
        return UInt32(address)
    }

    /// RFC 4291 text forms, with `::` and a trailing dotted IPv4; no zone.
    static func ipv6(_ text: ArraySlice<UInt8>) -> [UInt16]? {
        var pieces: [UInt16] = []
        var compress: Int?
        var i = text.startIndex
        if text.starts(with: [0x3A, 0x3A]) {
            compress = 0
            i += 2
        } else if text.first == 0x3A {
            return nil
        }
        while i < text.endIndex {
            guard pieces.count < 8 else { return nil }
            if text[i] == 0x3A {
                guard compress == nil else { return nil }
                i += 1
                compress = pieces.count
                continue
            }
            var value = 0, length = 0
            while i < text.endIndex, length < 4, let d = hexValue(text[i]) {
                value = value << 4 | Int(d)
                i += 1
                length += 1
            }
            if i < text.endIndex, text[i] == 0x2E {
                // Dotted IPv4 in the last two pieces: strict decimal, four parts.
                guard length > 0, pieces.count <= 6 else { return nil }
                let dotted = Array(text[(i - length)...])
                let parts = dotted.split(separator: 0x2E, omittingEmptySubsequences: false)
                guard parts.count == 4 else { return nil }
                var address: UInt32 = 0
                for part in parts {
                    guard (1...3).contains(part.count), part.allSatisfy(isDigit), !(part.count > 1 && part.first == 0x30),
                        let n = UInt32(String(decoding: part, as: UTF8.self)), n <= 255
                    else { return nil }
                    address = address << 8 | n
                }
                pieces.append(UInt16(address >> 16))
                pieces.append(UInt16(address & 0xFFFF))
                i = text.endIndex
                break
            }
            guard length > 0 else { return nil }
            pieces.append(UInt16(value))
            if i < text.endIndex {
                guard text[i] == 0x3A else { return nil }
                i += 1
                guard i < text.endIndex else { return nil }  // a trailing single colon
            }
        }
        if let compress {
            guard pieces.count < 8 else { return nil }
            pieces.insert(contentsOf: Array(repeating: 0, count: 8 - pieces.count), at: compress)
        }
        return pieces.count == 8 ? pieces : nil
    }

    static func isAlpha(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
}
