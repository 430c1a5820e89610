import Foundation
import LanbridgeProtocol
import Testing

struct JSONScannerTests {
    func value(_ key: String, _ text: String) -> String? {
        let bytes = Array(text.utf8)
        return (try? JSONScanner.members([key], in: bytes))?[key].map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    @Test func findsTopLevelValuesOnly() {
        let doc = #" { "a" : {"payload": 1, "x": "}\"{"}, "payload" : [1, {"b": "]"}, "c\\"], "z": null } "#
        #expect(value("payload", doc) == #"[1, {"b": "]"}, "c\\"]"#)
        #expect(value("a", doc) == #"{"payload": 1, "x": "}\"{"}"#)
        #expect(value("z", doc) == "null")
        #expect(value("missing", doc) == nil)
        #expect(value("n", #"{"n":-1.5e3}"#) == "-1.5e3")
    }

    /// What the review passed through to the gateway, and what parsers disagree on: all refused.
    @Test(arguments: [
        "", "[]", "{", #"{"a"}"#, #"{"a":}"#, #"{"a":"unterminated}"#, #"{"a":[1,2}"#, "{\"a\":\"\u{1}\"}", #"{"a":1 "b":2}"#,
        #"{"a":01}"#, #"{"a":"\q"}"#, #"{"a":1.2.3}"#, #"{"a":NaN}"#, #"{"a":[tru]}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":-}"#,
        #"{"a":[1,]}"#, #"{"a":1,}"#, #"{"k":1,"k":2}"#, #"{"x":{"k":1,"\u006b":2}}"#, #"{"k":1,"\u006b":2}"#, #"{"a":"\ud800"}"#,
        #"{"a":"\udc00x"}"#, #"{"a":1} x"#, #"{"a":Infinity}"#, #"{"a":+1}"#, "{\"a\":\"tab\there\"}",
        #"{"a":[0e3]}"#, #"{"a":0E3}"#, #"{"a":[188888888e385]}"#,  // valid RFC 8259, but Foundation's decoder refuses them: so do we (found by libFuzzer)
    ])
    func notStrictJSONIsRefused(_ text: String) {
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.members(["a"], in: Array(text.utf8)) }
    }

    @Test(arguments: [[0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC3], [0xE2, 0x82]] as [[UInt8]])
    func invalidUTF8IsRefused(_ sequence: [UInt8]) {
        let bytes = Array(#"{"a":""#.utf8) + sequence + Array(#""}"#.utf8)
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.members(["a"], in: bytes) }
    }

    @Test func validUnicodeAndEscapesPass() throws {
        let text = #"{"a":"é€😀\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t","b":[0,-0,1e5,1E-5,-1.5e+3,true,false,null,{}]}"#
        let members = try JSONScanner.members(["a", "b"], in: Array(text.utf8))
        #expect(JSONScanner.string(Array(text.utf8)[members["a"]!]) == "é€😀é😀\"\\/\u{8}\u{C}\n\r\t")
    }

    @Test func agreesWithFoundationOnValidDocuments() throws {
        var rng = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &rng) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &rng))
            case 2: return .number(Double(Int.random(in: -1000...1000, using: &rng)))
            case 3: return .string(String((0..<Int.random(in: 0...12, using: &rng)).map { _ in "ab\"\\{}[],:é😀\n\u{1} ".randomElement(using: &rng)! }))
            case 4: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in random(depth + 1) })
            default: return .object(Dictionary((0..<Int.random(in: 0...4, using: &rng)).map { ("k\($0)", random(depth + 1)) }) { $1 })
            }
        }
        for _ in 0..<500 {
            let payload = random(0)
            let doc: JSONValue = ["id": "i1", "ok": true, "payload": payload, "type": "invoke.result"]
            let bytes = Array(try JSONEncoder().encode(doc))
            let range = try #require(try JSONScanner.members(["payload"], in: bytes)["payload"])
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(bytes[range])) == payload)
        }
    }

    /// Whatever random mutations produce, the scanner only accepts what Foundation also reads, and
    /// reads it the same way.
    @Test func whatItAcceptsFoundationReadsTheSame() throws {
        var rng = SystemRandomNumberGenerator()
        let base = Array(#"{"id":"i1","ok":true,"payload":{"a":[1,"x\"y",{"b":null},2.5e3]},"type":"invoke.result"}"#.utf8)
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: at)
                default: bytes.insert(Array(",:[]{}\"\\0e.-tn ".utf8).randomElement(using: &rng)!, at: at)
                }
            }
            guard let members = try? JSONScanner.members(["payload", "type"], in: bytes) else { continue }
            let whole = try #require(
                try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)), "Foundation refused what the scanner took: \(String(decoding: bytes, as: UTF8.self))")
            if let range = members["payload"] { #expect(try JSONDecoder().decode(JSONValue.self, from: Data(bytes[range])) == whole["payload"]) }
            if let range = members["type"] { #expect(JSONScanner.string(bytes[range]).map(JSONValue.string) == whole["type"]) }
        }
    }

    @Test func nestingIsBoundedAndNeverRecursed() {
        let deep = Array(#"{"payload":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 200_000) + Array(repeating: UInt8(ascii: "]"), count: 200_000) + [UInt8(ascii: "}")]
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.members(["payload"], in: deep) }
        let fine = Array(#"{"payload":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 500) + Array(repeating: UInt8(ascii: "]"), count: 500) + [UInt8(ascii: "}")]
        #expect((try? JSONScanner.members(["payload"], in: fine))?["payload"]?.count == 1000)
    }

    /// One reader decides a message: a repeated "type" cannot be read as two different messages.
    @Test func aMessageIsDecidedOnceWithRepeatedKeysRefused() {
        #expect(throws: SessionMessageError.self) { try SessionMessages.read(Array(#"{"type":"ping","id":1,"type":"pong"}"#.utf8)) }
        #expect(throws: SessionMessageError.self) { try SessionMessages.read(Array(#"{"type":"ping","id":1,}"#.utf8)) }
        do {
            _ = try GatewayFrame.decode(Array(#"{"type":"req","id":"7","method":"node.list","method":"node.invoke"}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.requestID == "7" && error.description.contains("duplicate key \"method\""), "answered, and says why")
        }
    }

    @Test func aMalformedResultStillNamesItsInvokeWhenItCan() {
        do {
            _ = try SessionMessages.read(Array(#"{"type":"invoke.result","id":"r4","ok":true,"payload":01}"#.utf8))
            Issue.record("accepted")
        } catch {
            guard case let .malformed(_, type, id) = error else { Issue.record("\(error)"); return }
            #expect(type == "invoke.result" && id == "r4")
        }
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

/// Issue 40: string bodies are read a word at a time. Every byte that needs a look of its own, at
/// every offset within and across words, is judged as Foundation's parser judges it, and decoded
/// strings come out the same.
struct JSONScannerWordStepTests {
    static let specials: [[UInt8]] = [
        [0x00], [0x1F], [0x20], [0x21], [0x22], [0x5C], [0x7F], [0x80], [0xC3, 0xA9], [0xFF],
        [0xE2, 0x82], Array(#"\n"#.utf8), Array(#"\u00e9"#.utf8), Array(#"\""#.utf8), [0x5C, 0x5C],
    ]

    @Test func everySpecialByteAtEveryOffsetIsJudgedAsFoundationJudgesIt() {
        var compared = 0
        for special in Self.specials {
            for offset in 0..<20 {
                for tail in [0, 1, 7, 8, 9, 17] {
                    let body = Array(repeating: UInt8(ascii: "A"), count: offset) + special + Array(repeating: UInt8(ascii: "z"), count: tail)
                    let document = Array(#"{"k":""#.utf8) + body + Array(#""}"#.utf8)
                    let ours = (try? JSONScanner.validate(document)) != nil
                    let foundation = (try? JSONSerialization.jsonObject(with: Data(document))) != nil
                    #expect(ours == foundation, "\(special) at \(offset), \(tail) after: ours \(ours), Foundation's \(foundation)")
                    if ours, foundation, let range = (try? JSONScanner.members(["k"], in: document))?["k"],
                        let object = try? JSONSerialization.jsonObject(with: Data(document)) as? [String: String]
                    {
                        #expect(JSONScanner.string(document[range]) == object["k"], "\(special) at \(offset)")
                    }
                    compared += 1
                }
            }
        }
        #expect(compared == Self.specials.count * 20 * 6)
    }

    @Test func anUnterminatedStringEndingOnAWordBoundaryIsRefused() {
        for length in 0..<24 {
            let document = Array(#"{"k":""#.utf8) + Array(repeating: UInt8(ascii: "b"), count: length)
            #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.validate(document) }
        }
    }
}
