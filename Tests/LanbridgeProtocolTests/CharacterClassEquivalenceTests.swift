import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// Issue 40: the daemon's text handling moved from Foundation (and ICU) to the standard library.
/// Here the new code is held against Foundation's, scalar by scalar and byte by byte: equal, or
/// different only where a difference is named and argued. They take a minute in a debug build,
/// so scripts/test-package runs them (LANBRIDGE_EQUIVALENCE=1), beside its size and ldd checks.
@Suite(.enabled(if: equivalenceChecksRequested, "run by scripts/test-package (LANBRIDGE_EQUIVALENCE=1): every scalar against Foundation"))
struct CharacterClassEquivalenceTests {
    /// Every Unicode scalar, surrogates excepted.
    static let allScalars: [Unicode.Scalar] = (UInt32(0)...0x10FFFF).compactMap(Unicode.Scalar.init)

    static let foundationRemoves = CharacterSet.controlCharacters.union(.illegalCharacters)

    /// Foundation's sanitiser, as NodeDetails had it before (the reference).
    static func foundationClean(_ text: String) -> String {
        let visible = text.unicodeScalars.filter { !foundationRemoves.contains($0) }
        let trimmed = String(String.UnicodeScalarView(visible)).trimmingCharacters(in: .whitespaces)
        return String(trimmed.prefix(NodeDetails.Limits.text))
    }

    /// Where the two may disagree, and why. Foundation's tables on Linux stop near Unicode 8 and
    /// call letters added since "illegal" (and, by a slip in them, four private-use scalars); the
    /// stdlib knows Unicode 17. The stdlib side also removes what Unicode defines as invisible
    /// (Default_Ignorable_Code_Point: Hangul fillers, variation selectors) and the noncharacters
    /// U+xFFFE/U+xFFFF of the last planes, which Foundation keeps.
    enum Difference: Equatable { case same, foundationRemovesAGraphicCharacter, stdlibRemovesAnInvisible }

    static func difference(_ scalar: Unicode.Scalar) -> Difference {
        let byFoundation = foundationRemoves.contains(scalar)
        let byStdlib = CharacterClass.isInvisibleOrUnassigned(scalar)
        if byFoundation == byStdlib { return .same }
        return byFoundation ? .foundationRemovesAGraphicCharacter : .stdlibRemovesAnInvisible
    }

    @Test func whatTheSanitiserRemovesDiffersFromFoundationOnlyWhereArgued() {
        var counts: [String: Int] = [:]
        for scalar in Self.allScalars {
            let properties = scalar.properties
            switch Self.difference(scalar) {
            case .same:
                continue
            case .foundationRemovesAGraphicCharacter:
                // Kept by the new code: assigned, drawn, and no control, format or invisible.
                let category = properties.generalCategory
                #expect(![.control, .format, .unassigned, .surrogate].contains(category), "U+\(String(scalar.value, radix: 16)) \(category)")
                #expect(!properties.isDefaultIgnorableCodePoint)
                let newerThanFoundation = properties.age.map { $0.major > 8 || ($0.major == 8 && $0.minor > 0) } ?? false
                #expect(newerThanFoundation || category == .privateUse, "U+\(String(scalar.value, radix: 16)) is old: Foundation and the stdlib should agree")
                counts["kept, newer than Foundation's tables", default: 0] += 1
            case .stdlibRemovesAnInvisible:
                #expect(properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint, "U+\(String(scalar.value, radix: 16))")
                counts["removed, invisible or noncharacter", default: 0] += 1
            }
        }
        // The ASCII and Latin-1 ranges, where terminal escapes live, agree exactly.
        #expect(Self.allScalars.prefix(256).allSatisfy { Self.difference($0) == .same })
        // The differences are the ones measured when the code was switched (Unicode 17 tables).
        #expect((counts["removed, invisible or noncharacter"] ?? 0) < 300)
        #expect((counts["kept, newer than Foundation's tables"] ?? 0) < 20_000)
    }

    @Test func whitespaceClassesAreFoundationsExactly() {
        for scalar in Self.allScalars {
            #expect(CharacterClass.isWhitespace(scalar) == CharacterSet.whitespaces.contains(scalar), "U+\(String(scalar.value, radix: 16))")
            #expect(CharacterClass.isWhitespaceOrNewline(scalar) == CharacterSet.whitespacesAndNewlines.contains(scalar), "U+\(String(scalar.value, radix: 16))")
        }
    }

    @Test func theSanitiserMatchesFoundationsOnEveryScalarItAgreesOnAndEveryByte() {
        var compared = 0
        for scalar in Self.allScalars where Self.difference(scalar) == .same {
            let s = String(scalar)
            // Trimmed at both ends, kept or removed inside; cut at 64 characters.
            for text in scalar.value < 0x3000 ? ["\(s)a \(s)", s + String(repeating: "x", count: 70)] : ["\(s)a \(s)"] {
                let expected = Self.foundationClean(text)
                #expect(
                    NodeDetails(displayName: text, platform: "x").sanitized().displayName == (expected.isEmpty ? "unnamed device" : expected),
                    "U+\(String(scalar.value, radix: 16))")
                compared += 1
            }
        }
        // Every byte as a device would send it: alone (invalid UTF-8 arrives as U+FFFD) and in a name.
        for byte in UInt8.min...UInt8.max {
            let decoded = String(decoding: [byte], as: UTF8.self)
            for text in [decoded, "Ada\(decoded)'s phone", "\(decoded)\(decoded)"] {
                #expect(
                    NodeDetails(displayName: text, platform: "x").sanitized().displayName
                        == (Self.foundationClean(text).isEmpty ? "unnamed device" : Self.foundationClean(text)))
            }
        }
        #expect(compared > 1_000_000)
    }

    @Test func trimmingMatchesFoundationAtBothEnds() {
        var random = SplitMix(state: 40)
        let pool: [Unicode.Scalar] = [
            " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2028}", "\u{2029}", "\u{200B}", "\u{3000}", "\u{FEFF}", "a", "é", "\u{301}",
        ]
        for _ in 0..<20_000 {
            let text = String(String.UnicodeScalarView((0..<Int.random(in: 0..<8, using: &random)).map { _ in pool[Int.random(in: 0..<pool.count, using: &random)] }))
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
            #expect(text.trimmingWhitespaceAndNewlines() == text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test func percentEncodingMatchesFoundationForEveryScalarAndDecodingForEveryEscape() {
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        for scalar in Self.allScalars {
            let text = "a\(scalar)~"
            #expect(PercentEncoding.encode(text) == text.addingPercentEncoding(withAllowedCharacters: unreserved))
        }
        for high in UInt8.min...UInt8.max {
            for low in UInt8.min...UInt8.max {
                let text = "x%" + String(decoding: [high, low], as: UTF8.self)
                // Foundation's one slip: a lone %A9 (not UTF-8) comes back as U+FFFD; refused here.
                let expected = text.lowercased() == "x%a9" ? nil : text.removingPercentEncoding
                #expect(PercentEncoding.decode(text) == expected, "\(text.debugDescription)")
            }
        }
        for text in ["%E2%82%AC", "%C3", "%C3%28", "%F0%9F%98%80", "%ED%A0%80", "%00", "a%", "%%41", "%4", "%G0", "%e2%82%ac", "100%", "%FF%FE", ""] {
            #expect(PercentEncoding.decode(text) == text.removingPercentEncoding, "\(text)")
        }
    }

    @Test func anInviteWritesItsNameAsFoundationDid() {
        let old = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~")).intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        let fingerprint = Fingerprint(publicKey: Array(repeating: 1, count: 32))
        for chunk in stride(from: 0, to: Self.allScalars.count, by: 512) {
            let name = String(String.UnicodeScalarView(Self.allScalars[chunk..<min(chunk + 512, Self.allScalars.count)]))
            let invite = InviteURI(
                host: "fe80::1", port: 18790, bridgeFingerprint: fingerprint, secret: Array(repeating: 7, count: 16), name: name,
                alternates: [ReachableAddress(host: "2001:db8::2", port: 1)])
            let expected = "&a=%5B2001:db8::2%5D:1&name=" + (name.addingPercentEncoding(withAllowedCharacters: old) ?? "")
            #expect(invite.description.hasSuffix(expected))
            #expect(InviteURI(invite.description)?.name == name)
        }
    }
}

/// The Foundation equivalence suites run when asked (scripts/test-package asks).
let equivalenceChecksRequested = ProcessInfo.processInfo.environment["LANBRIDGE_EQUIVALENCE"] == "1"
