#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A date as `JSONEncoder`'s `.iso8601` strategy writes it (`2026-11-28T09:36:06Z`: UTC, whole
/// seconds rounded down), by arithmetic: that strategy's formatter was a tenth of what writing
/// runtime.json cost with 10,000 nodes connected (issue 53 §4).
public enum ISO8601Text {
    public static func string(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        // Foundation's calendar is Julian before 1582; nothing lanbridge writes is that old.
        guard (1600...9999).contains(year) else { return date.formatted(.iso8601) }
        var out: [UInt8] = []
        out.reserveCapacity(20)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(time / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(time / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(time % 60, 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }
}
