import ArgumentParser
import FoundationEssentials
import LanbridgeProtocol

// Every kind of value the CLI takes is parsed in one place, here: a bad one is a usage error
// (exit 64) before anything is read or written.

/// A duration: `500ms`, `2s`, `5m`, `1h`, or a bare number of seconds. Finite, above zero, and at
/// most 30 days.
struct Duration: ExpressibleByArgument {
    static let maximum: TimeInterval = 30 * 86_400
    let seconds: TimeInterval

    /// Shown in --help as the user would type it ("5m"), not as a struct dump.
    var defaultValueDescription: String { Output.duration(seconds) }
    var milliseconds: Int { Int((seconds * 1000).rounded()) }

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        let (number, scale) = units.first { argument.hasSuffix($0.0) }.map { (String(argument.dropLast($0.0.count)), $0.1) } ?? (argument, 1)
        // Digits and one dot only: no "inf", "nan", "1e300" or signs.
        guard !number.isEmpty, number.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2E }), number.utf8.filter({ $0 == 0x2E }).count <= 1,
            let value = Double(number), value.isFinite, value > 0, value * scale <= Self.maximum, value * scale >= 0.001
        else { return nil }
        seconds = value * scale
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// A TCP port, 1–65535 (`allowZero` for `serve`, where 0 picks a free one).
struct Port: ExpressibleByArgument {
    let value: Int
    init?(argument: String) {
        guard argument.utf8.count <= 5, argument.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(argument), (0...65535).contains(value) else { return nil }
        self.value = value
    }
    var defaultValueDescription: String { String(value) }
}

/// A host devices can dial: a host name or an IP address (IPv6 without brackets is fine).
struct DialHost: ExpressibleByArgument {
    let name: String
    init?(argument: String) {
        guard let host = InviteURI.validHost(argument) else { return nil }
        name = host
    }
}
