/// Reads a number token that has passed RFC 8259's grammar, in time linear in its length: however
/// long the token (a megabyte of digits, an exponent of a million digits), the platform's `strtod`
/// is handed at most `maxDigits` significant digits and a small exponent.
///
/// The shortened text rounds exactly as the whole one: IEEE doubles need at most 767 significant
/// decimal digits to decide a rounding, and when nonzero digits are cut off a final `1` keeps the
/// shortened value strictly above the cut (the "sticky" digit).
public enum JSONNumber {
    static let maxDigits = 800
    /// Beyond this, the decimal exponent only says "overflows" or "underflows".
    static let exponentLimit = 100_000

    /// The token's value, as a JSON parser would give it (±infinity past a double's range).
    public static func double(_ token: some Collection<UInt8>) -> Double {
        if token.count <= 24 { return Double(String(decoding: token, as: UTF8.self)) ?? 0 }
        let normal = normalise(token)
        guard !normal.digits.isEmpty else { return normal.negative ? -0.0 : 0 }
        if normal.exponent > exponentLimit { return normal.negative ? -.infinity : .infinity }
        if normal.exponent < -exponentLimit { return normal.negative ? -0.0 : 0 }
        let text = (normal.negative ? "-0." : "0.") + String(decoding: normal.digits, as: UTF8.self) + "e\(normal.exponent)"
        return Double(text) ?? 0
    }

    /// Whether the token's value is within a double's range; only tokens whose magnitude lies at
    /// the very edge (10^308 to 10^309) are parsed at all.
    public static func isFinite(_ token: some Collection<UInt8>) -> Bool {
        let normal = normalise(token)
        guard !normal.digits.isEmpty else { return true }
        // value = 0.d1d2… × 10^exponent; the largest double is 0.17976931348623157 × 10^309.
        if normal.exponent < 309 { return true }
        if normal.exponent > 309 { return false }
        return double(token).isFinite
    }

    /// The token as `[-]0.DIGITS × 10^exponent`, DIGITS without leading zeros and at most
    /// `maxDigits + 1` long (the last one the sticky digit); no digits for zero. The exponent
    /// saturates, so an exponent token of any length reads in one pass.
    static func normalise(_ token: some Collection<UInt8>) -> (negative: Bool, digits: [UInt8], exponent: Int) {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0  // the position of the decimal point relative to the digits kept so far
        var dropped = false
        var inFraction = false
        var index = token.startIndex
        if index < token.endIndex, token[index] == UInt8(ascii: "-") { negative = true; token.formIndex(after: &index) }
        while index < token.endIndex {
            let c = token[index]
            if c == UInt8(ascii: ".") {
                inFraction = true
            } else if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                break
            } else if digits.isEmpty, c == UInt8(ascii: "0") {
                if inFraction { exponent -= 1 }
            } else {
                if !inFraction { exponent += 1 }
                if digits.count < maxDigits { digits.append(c) } else if c != UInt8(ascii: "0") { dropped = true }
            }
            token.formIndex(after: &index)
        }
        if index < token.endIndex {  // the exponent part
            token.formIndex(after: &index)
            var sign = 1
            if index < token.endIndex, token[index] == UInt8(ascii: "+") || token[index] == UInt8(ascii: "-") {
                if token[index] == UInt8(ascii: "-") { sign = -1 }
                token.formIndex(after: &index)
            }
            var value = 0
            while index < token.endIndex {
                value = min(value * 10 + Int(token[index] &- UInt8(ascii: "0")), 10 * exponentLimit)
                token.formIndex(after: &index)
            }
            exponent += sign * value
        }
        if dropped { digits.append(UInt8(ascii: "1")) }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return (negative, digits, exponent)
    }
}
