import Foundation
@testable import LanbridgeProtocol
import Testing

/// The hand-written JSON reader and writer agree with the strict scanner and with Foundation.
struct JSONValueTests {
    static let samples: [String] = [
        #"{"a":[1,2.5,-3e-7,true,false,null],"b":{"c":"d\"e\\f\n\u0001é😀"},"":""}"#,
        #"[]"#, #"{}"#, #" [ { } , [ ] , "x" ] "#, #"{"big":12345678901234,"neg":-0.25,"exp":1E+20}"#,
    ]

    @Test(arguments: samples)
    func readingBuildsWhatFoundationBuilds(_ text: String) throws {
        let bytes = Array(text.utf8)
        try JSONScanner.validate(bytes)
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        #expect(JSONValue(validated: bytes) == foundation)
    }

    @Test(arguments: samples)
    func writingRoundTripsAndIsStrict(_ text: String) throws {
        let value = JSONValue(validated: Array(text.utf8))
        let written = value.serialized
        try JSONScanner.validate(written)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(written)) == value)
        #expect(JSONValue(validated: written).serialized == written, "the same value, the same bytes")
    }

    @Test func anInvokeWrittenByHandReadsBackAsItself() throws {
        let invoke = Invoke(id: "i7", command: "canvas.navigate", params: ["url": "https://example.com/a\"b", "n": 3], timeoutMs: 5000)
        guard case let .message(read as Invoke) = try SessionMessages.read(SessionMessages.encode(invoke)) else {
            Issue.record("not read back as an invoke")
            return
        }
        #expect(read.id == invoke.id && read.command == invoke.command && read.params == invoke.params && read.timeoutMs == 5000)
    }

    /// A number JSON cannot carry never traps the sender: the peer gets an error message instead.
    @Test func aMessageThatCannotBeEncodedBecomesAnErrorNotACrash() throws {
        let bytes = SessionMessages.encode(NodeEvent(event: "x", payload: ["n": .number(.nan)]))
        guard case let .message(error as ErrorMessage) = try SessionMessages.read(bytes) else {
            Issue.record("not an error: \(String(decoding: bytes, as: UTF8.self))")
            return
        }
        #expect(error.code == ErrorMessage.badMessage && error.message.contains("event"))
    }

    /// Issue 62 §5: a value that cannot be encoded throws. `init(encoding:)` made it `null`, so an
    /// answer could carry a silent `null` where a record was.
    @Test func aValueThatCannotBeEncodedThrowsInsteadOfBecomingNull() throws {
        struct Reading: Encodable { let value: Double }
        #expect(throws: (any Error).self) { try JSONValue(encoding: Reading(value: .nan)) }
        #expect(try JSONValue(encoding: Reading(value: 2.5)) == ["value": .number(2.5)])
    }
}
