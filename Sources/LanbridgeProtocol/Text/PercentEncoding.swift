/// Percent-encoding (RFC 3986 §2.1) of UTF-8, as URLs, invite links and the console's paths use it.
public enum PercentEncoding {
    /// Each byte of `text`'s UTF-8 kept if `keep` says so, else written `%XX` (upper-case hex).
    public static func encode(_ text: some StringProtocol, keeping keep: (UInt8) -> Bool = CharacterClass.isUnreserved) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if keep(byte) { out.append(byte) } else { out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `%XX` sequences decoded; nil if one is cut short or not hex, or the bytes are not UTF-8
    /// (as Foundation's `removingPercentEncoding`).
    public static func decode(_ text: some StringProtocol) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
            guard let high = bytes.next().flatMap(Hex.value(of:)), let low = bytes.next().flatMap(Hex.value(of:)) else { return nil }
            out.append(high << 4 | low)
        }
        let text = String(decoding: out, as: UTF8.self)
        return text.utf8.elementsEqual(out) ? text : nil  // decoding repairs what is not UTF-8
    }
}
