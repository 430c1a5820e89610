import Foundation
import LanbridgeProtocol
import Testing

struct JSONScannerTests {
    func value(_ key: String, _ text: String) -> String? {
        let bytes = Array(text.utf8)
        return JSONScanner.valueRange(ofKey: key, in: bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    @Test func findsTopLevelValuesOnly() {
        let doc = #" { "a" : {"payload": 1, "x": "}\"{"}, "payload" : [1, {"b": "]"}, "c\\"], "z": null } "#
        #expect(value("payload", doc) == #"[1, {"b": "]"}, "c\\"]"#)
        #expect(value("a", doc) == #"{"payload": 1, "x": "}\"{"}"#)
        #expect(value("z", doc) == "null")
        #expect(value("missing", doc) == nil)
        #expect(value("n", #"{"n":-1.5e3}"#) == "-1.5e3")
        #expect(value("k", #"{"k":1,"k":2}"#) == "2", "the last of a repeated key, as Foundation decodes it")
    }

    @Test(arguments: ["", "[]", "{", #"{"a"}"#, #"{"a":}"#, #"{"a":"unterminated}"#, #"{"a":[1,2}"#, "{\"a\":\"\u{1}\"}", #"{"a":1 "b":2}"#])
    func malformedDocumentsGiveNothing(_ text: String) {
        #expect(value("a", text) == nil || value("b", text) == nil)
    }

    @Test func agreesWithFoundationOnValidDocuments() throws {
        var rng = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &rng) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &rng))
            case 2: return .number(Double(Int.random(in: -1000...1000, using: &rng)))
            case 3: return .string(String((0..<Int.random(in: 0...12, using: &rng)).map { _ in "ab\"\\{}[],:é\n ".randomElement(using: &rng)! }))
            case 4: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in random(depth + 1) })
            default: return .object(Dictionary((0..<Int.random(in: 0...4, using: &rng)).map { ("k\($0)", random(depth + 1)) }) { $1 })
            }
        }
        for _ in 0..<500 {
            let payload = random(0)
            let doc: JSONValue = ["id": "i1", "ok": true, "payload": payload, "type": "invoke.result"]
            let bytes = Array(try JSONEncoder().encode(doc))
            let range = try #require(JSONScanner.valueRange(ofKey: "payload", in: bytes))
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(bytes[range])) == payload)
        }
    }

    @Test func randomBytesNeverCrashIt() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            var bytes = Array(#"{"id":"i1","ok":true,"payload":{"a":[1,"x\"y",{"b":null}]},"type":"invoke.result"}"#.utf8)
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            _ = JSONScanner.valueRange(ofKey: "payload", in: bytes)
            _ = try? InvokeResult.received(from: bytes)
        }
        // Deep nesting is counted, not recursed into.
        let deep = Array(#"{"payload":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 200_000) + Array(repeating: UInt8(ascii: "]"), count: 200_000) + [UInt8(ascii: "}")]
        #expect(JSONScanner.valueRange(ofKey: "payload", in: deep)?.count == 400_000)
    }

    @Test func aResultKeepsItsPayloadAsBytesAndIsSplicedIntoTheResponse() throws {
        let message = SessionMessages.encode(InvokeResult(id: "i7", payload: ["format": "png", "base64": "iVBORw0K"]))
        let received = try InvokeResult.received(from: message)
        #expect(received.id == "i7" && received.ok)
        guard case .raw = received.payload else { Issue.record("payload was parsed"); return }
        let frame = GatewayFrame.response(id: "g\"1", answer: .success(received.payload)).reduce([], +)
        #expect(try GatewayFrame.decode(frame) == .response(id: "g\"1", result: .success(["format": "png", "base64": "iVBORw0K"])))
        #expect(throws: SessionMessageError.self) { try InvokeResult.received(from: Array(#"{"type":"invoke.result","id":"x","ok":true,"payload":[}"#.utf8)) }
    }
}
