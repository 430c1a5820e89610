import Foundation
import LanbridgeProtocol
import Testing

/// runtime.json's dates are written by arithmetic (ISO8601Text), read back by `JSONDecoder`'s
/// `.iso8601` strategy: the text must be what `JSONEncoder`'s strategy writes, for every date.
struct ISO8601TextTests {
    @Test func writesWhatTheEncodersStrategyWrites() throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        var generator = SystemRandomNumberGenerator()
        // Leap days, year and century ends, before 1970, fractions (rounded down), and random ones.
        var seconds: [Double] = [0, -1, -1.5, 0.999, 951_782_400, 951_868_799.5, 4_107_542_399, 253_402_300_799, -62_135_596_800, 1_795_000_000.999]
        for _ in 0..<5000 { seconds.append(Double.random(in: -2.2e9...7.3e9, using: &generator)) }
        for t in seconds {
            let date = Date(timeIntervalSince1970: t)
            let expected = try JSONDecoder().decode([String].self, from: encoder.encode([date]))[0]
            #expect(ISO8601Text.string(date) == expected, "\(t)")
        }
    }
}
