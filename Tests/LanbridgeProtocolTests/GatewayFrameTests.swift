import Foundation
import LanbridgeProtocol
import Testing

struct GatewayFrameTests {
    @Test func framesRoundTrip() throws {
        let frames: [GatewayFrame] = [
            .request(id: "1", method: "node.invoke", params: ["nodeId": "A", "command": "canvas.snapshot"]),
            .response(id: "1", result: .success(["ok": true])),
            .response(id: "2", result: .failure(ErrorMessage(code: "TIMEOUT", message: "late", details: ["nodeId": "A"], retryable: true, retryAfterMs: 5))),
            .event(name: "node.event", payload: ["type": "connected"]),
        ]
        for frame in frames { #expect(try GatewayFrame.decode(frame.encoded()) == frame) }
    }

    @Test func theWireShapeIsTheDocumentedOne() throws {
        let text = String(
            decoding: GatewayFrame.response(id: "7", result: .failure(ErrorMessage(code: "RATE_LIMITED", message: "slow down", retryable: true, retryAfterMs: 250))).encoded(),
            as: UTF8.self)
        #expect(text == #"{"error":{"code":"RATE_LIMITED","message":"slow down","retryAfterMs":250,"retryable":true},"id":"7","ok":false,"type":"res"}"#)
    }

    @Test func badFramesSayWhatIsWrongAndKeepTheRequestID() {
        #expect(throws: GatewayFrame.DecodingError.notJSON) { try GatewayFrame.decode(Array("nope".utf8)) }
        #expect(throws: GatewayFrame.DecodingError.unknownType("rpc")) { try GatewayFrame.decode(Array(#"{"type":"rpc"}"#.utf8)) }
        do {
            _ = try GatewayFrame.decode(Array(#"{"type":"req","id":"9"}"#.utf8))
            Issue.record("a request without a method was accepted")
        } catch {
            #expect(error.requestID == "9")
        }
        do {
            _ = try GatewayFrame.decode(Array(#"{"type":"req","id":"5","method":42}"#.utf8))
            Issue.record("a numeric method was accepted")
        } catch {
            #expect(error.requestID == "5", "a wrongly typed field still lets the request be answered")
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [#"{"type":"req","id":"1","method":"node.list","params":{}}"#, #"{"type":"res","id":"1","ok":false,"error":{"code":"X","message":"y"}}"#]
        for _ in 0..<3000 {
            var bytes = Array(seeds.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let i = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[i] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: i)
                default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: i)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            _ = try? GatewayFrame.decode(bytes)
        }
    }
}
