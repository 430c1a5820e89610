import LanbridgeProtocol
import Testing

/// The string helpers that replaced Foundation's in the daemon (issue 40).
struct TextTests {
    @Test func numbersAreWrittenAsPrintfWroteThem() {
        #expect(NumberText.fixed(2.25) == "2.3")
        #expect(NumberText.fixed(0) == "0.0")
        #expect(NumberText.fixed(0.04) == "0.0")
        #expect(NumberText.fixed(-1.26, places: 2) == "-1.26")
        #expect(NumberText.fixed(-0.01) == "0.0")
        #expect(NumberText.fixed(12.0, places: 0) == "12")
        #expect(NumberText.fixed(.infinity) == "inf")
        #expect(NumberText.octalMode(0o600 as UInt32) == "600")
        #expect(NumberText.octalMode(0o7 as UInt16) == "007")
        #expect(NumberText.octalMode(0o4755 as UInt32) == "4755")
    }

    @Test func paddingWidensAndNeverCuts() {
        #expect("ab".padded(to: 4) == "ab  ")
        #expect("abcdef".padded(to: 4) == "abcdef")
        #expect("critical".padded(to: 7) == "critical")
    }

    @Test func replacingWorksOnScalarsSoACombiningMarkCannotHideADot() {
        let label = "a.\u{301}b\\"
        #expect(label.replacingScalars { $0 == "\\" ? "\\\\" : $0 == "." ? "\\." : nil } == "a\\.\u{301}b\\\\")
        #expect("[::1]".trimming { $0 == "[" || $0 == "]" } == "::1")
        #expect(" \u{200B}\tx y \u{3000}".trimmingWhitespace() == "x y")
        #expect("\n x \r\n".trimmingWhitespaceAndNewlines() == "x")
        #expect("   ".trimmingWhitespace() == "")
    }

    @Test func percentEncodingRoundTripsAndRefusesWhatIsNotUTF8() {
        #expect(PercentEncoding.encode("Ada's phone/é") == "Ada%27s%20phone%2F%C3%A9")
        #expect(PercentEncoding.decode("Ada%27s%20phone%2F%C3%A9") == "Ada's phone/é")
        #expect(PercentEncoding.decode("%C3") == nil)
        #expect(PercentEncoding.decode("%zz") == nil)
        #expect(PercentEncoding.decode("50%") == nil)
        #expect(PercentEncoding.decode("%ED%A0%80") == nil)  // a surrogate
    }

    @Test func theSanitiserRemovesInvisibleFillersFoundationKept() {
        // U+3164 HANGUL FILLER is a letter to Foundation and draws as nothing: a name of fillers
        // looked empty, or two names the same.
        #expect(NodeDetails(displayName: "Ada\u{3164}\u{FE0F}", platform: "ios").sanitized().displayName == "Ada")
        #expect(NodeDetails(displayName: "\u{3164}\u{3164}", platform: "ios").sanitized().displayName == "unnamed device")
    }
}
