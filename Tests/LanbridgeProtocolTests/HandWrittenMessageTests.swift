import Foundation
@testable import LanbridgeProtocol
import Testing

/// Issue 22: the messages of the hot path are read and written by hand (an invoke read by a node,
/// an invoke and a successful result written). Each must say exactly what the Codable path says.
struct HandWrittenMessageTests {
    static let invokes = [
        #"{"type":"invoke","id":"b.1","command":"device.echo","params":{"x":[1,2.5,"é\n"],"y":null},"timeoutMs":30000}"#,
        #"{"type":"invoke","id":"b.2","command":"canvas.snapshot"}"#,
        #"{"type":"invoke","id":"b.3","command":"c","params":null,"timeoutMs":null,"extra":{"ignored":true}}"#,
        #"{"type":"invoke","id":"b.4","command":"c","timeoutMs":5.0}"#,
        #"{"type":"invoke","id":"b.5","command":"c","params":[1]}"#,
        #"{"type":"invoke","id":"b.6","command":"c","timeoutMs":5.5}"#,
        #"{"type":"invoke","id":"b.7","command":"c","timeoutMs":"5"}"#,
        #"{"type":"invoke","id":7,"command":"c"}"#,
        #"{"type":"invoke","command":"c"}"#,
        #"{"type":"invoke","id":"b.8"}"#,
    ]

    @Test(arguments: invokes)
    func anInvokeReadByHandIsWhatTheDecoderReads(_ text: String) {
        let bytes = Array(text.utf8)
        let coded = try? JSONDecoder().decode(Invoke.self, from: Data(bytes))
        let read = try? SessionMessages.decode(bytes) as? Invoke
        #expect(read == coded, "\(text)")
    }

    static let results: [InvokeResult] = [
        InvokeResult(id: "b.1", payload: ["image": "iVBOR\u{1}\"\\/", "size": [1400, 1400], "scale": .number(1.5), "none": .null, "ok": true]),
        InvokeResult(id: "quote\"d\n", payload: []),
        InvokeResult(id: "b.3", ok: true, payload: nil, error: nil),
        InvokeResult(id: "b.4", error: ErrorMessage(code: "COMMAND_FAILED", message: "no")),
    ]

    @Test(arguments: results)
    func aResultWrittenByHandSaysWhatTheEncoderSays(_ result: InvokeResult) throws {
        let written = SessionMessages.encode(result)
        let viaHand = try JSONDecoder().decode(JSONValue.self, from: Data(written))
        let encoded = try JSONEncoder().encode(result)
        var tagged = try JSONDecoder().decode(JSONValue.self, from: encoded)
        if case var .object(fields) = tagged { fields["type"] = .string(InvokeResult.type); tagged = .object(fields) }
        #expect(viaHand == tagged)
        #expect(try SessionMessages.decode(written) as? InvokeResult == result)
    }

    @Test func anInvokeWrittenByHandSaysWhatTheEncoderSays() throws {
        for invoke in [
            Invoke(id: "b.9", command: "device.echo", params: ["a": ["b": 1, "c": "\u{7f}\u{2028}\u{1}"]], timeoutMs: 1234),
            Invoke(id: "x\"", command: "y"),
        ] {
            let viaHand = try JSONDecoder().decode(JSONValue.self, from: Data(SessionMessages.encode(invoke)))
            var tagged = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(invoke))
            if case var .object(fields) = tagged { fields["type"] = .string(Invoke.type); tagged = .object(fields) }
            #expect(viaHand == tagged)
        }
    }
}
