import Foundation
import LanbridgeCrypto
@testable import LanbridgeProtocol
import Testing
import TestSupport

/// Seeded random inputs against the decoders: they may only ever throw a `TransportError`,
/// and a mutated stream must never deliver a message the sender did not send.
struct FuzzTests {

    @Test func randomBytesAtABridgeOnlyEverProduceTransportErrors() {
        var rng = SplitMix(state: 1)
        for _ in 0..<3000 {
            var bridge = SecureSession(responderWith: Pair.bridgeKey)
            let length = Int.random(in: 0...600, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Half the time, start with a valid preamble so the handshake parser is reached too.
            if Bool.random(using: &rng) { bytes = FrameDecoder.frame(Preamble(versions: .supported, handshake: .xx).bytes) + bytes }
            do {
                let outputs = try bridge.receive(bytes)
                #expect(!outputs.contains { if case .established = $0 { true } else { false } })
                #expect(!outputs.contains { if case .message = $0 { true } else { false } })
            } catch {
                #expect(error is TransportError)
            }
        }
    }

    @Test func mutatedTranscriptsNeverDeliverForgedMessages() throws {
        var rng = SplitMix(state: 2)
        let sent: [[UInt8]] = [Array("canvas.snapshot".utf8), SecureRandom.bytes(70_000), []]
        for _ in 0..<300 {
            var (node, opening) = try SecureSession.initiate(with: Pair.nodeKey)
            var bridge = SecureSession(responderWith: Pair.bridgeKey)
            // A clean handshake, then a mutated stream of application frames.
            var message3: [UInt8] = []
            for case let .send(w2) in try bridge.receive(opening) { for case let .send(w3) in try node.receive(w2) { message3 = w3 } }
            _ = try bridge.receive(message3)
            node.authorize()
            bridge.authorize()
            var wire = try sent.flatMap { try node.seal($0) }
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: wire[Int.random(in: 0..<wire.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            case 1: wire.removeSubrange(Int.random(in: 0..<wire.count, using: &rng)...)
            case 2: wire.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0..<wire.count, using: &rng))
            default: wire.removeSubrange(0..<Int.random(in: 1..<wire.count, using: &rng))
            }
            var delivered: [[UInt8]] = []
            do {
                for case let .message(m) in try bridge.receive(wire) { delivered.append(m) }
                try bridge.receiveEOF()
            } catch {
                #expect(error is TransportError)
            }
            #expect(Array(sent.prefix(delivered.count)) == delivered, "only an unmodified prefix may get through")
        }
    }

    @Test func frameDecoderNeverBuffersBeyondItsLimit() throws {
        var rng = SplitMix(state: 3)
        for _ in 0..<2000 {
            var decoder = FrameDecoder(limit: Int.random(in: 1...4096, using: &rng))
            let bytes = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            decoder.append(bytes)
            do {
                while let frame = try decoder.next() { #expect(frame.count <= decoder.limit && !frame.isEmpty) }
            } catch {
                #expect(error is TransportError)
            }
        }
    }
}

extension FuzzTests {
    @Test func sessionMessageDecodingOnlyEverFailsWithAReason() {
        var rng = SplitMix(state: 4)
        let seeds = [
            SessionMessages.encode(PairRequest(details: NodeDetails(displayName: "a", platform: "ios"), commitment: "00")),
            SessionMessages.encode(Invoke(id: "1", command: "canvas.snapshot", params: ["x": [1, "y", true, .null]])),
            SessionMessages.encode(Ping(id: 7)),
        ]
        for _ in 0..<2000 {
            var bytes = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.removeSubrange(Int.random(in: 0..<bytes.count, using: &rng)...)
                default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            // Errors are typed (SessionMessageError); what decodes, Foundation reads as the same type.
            guard let message = try? SessionMessages.decode(bytes) else { continue }
            let tag = (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])?["type"] as? String
            #expect(tag == type(of: message).type, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func everyKnownMessageRoundTrips() throws {
        let details = NodeDetails(displayName: "Ada", platform: "ios", caps: ["canvas"], commands: ["canvas.snapshot"])
        let id = Fingerprint(publicKey: SecureRandom.bytes(32))
        let messages: [any SessionMessage] = [
            Welcome(bridgeName: "b", paired: false, nodeId: id), PairRequest(details: details, commitment: "ab"),
            PairReveal(nonce: "cd"), PairResolved(outcome: .expired, nodeId: id), InviteRedeem(secret: "ef", details: details),
            ErrorMessage(code: ErrorMessage.notPaired, message: "pair first", retryable: false), Ping(id: 1), Pong(id: 1),
            AppState(foreground: false), Revoked(nodeId: id), Invoke(id: "9", command: "device.echo", params: ["k": "v"]),
            InvokeResult(id: "9", error: ErrorMessage(code: "X", message: "y")), InvokeCancel(id: "9"), NodeEvent(event: "e", payload: [1, 2]),
            GatewayCall(id: "c1", method: "agent", params: ["message": "hi"], idempotencyKey: "k"),
            GatewayCallResult(id: "c1", result: .failure(ErrorMessage(code: ErrorMessage.forbidden, message: "no", details: ["reason": "x"], retryAfterMs: 3))),
            PushRegister(id: "p1", provider: "apns", token: String(repeating: "ab", count: 32), environment: "sandbox", topic: "com.example.app"),
            PushResult(id: "p1", error: ErrorMessage(code: ErrorMessage.invalidRequest, message: "no")),
            CanvasRefresh(id: "v1"),
            CanvasGrant(
                id: "v1", canvas: CanvasAccess(url: "https://10.0.0.2:18793/__openclaw__/cap/abc", tlsSha256: String(repeating: "0f", count: 32), expiresAtMs: 1_800_000_000_000)),
        ]
        #expect(Set(messages.map { type(of: $0).type }).count == SessionMessages.known.count - 2, "all but the two with dates")
        for message in messages {
            let decoded = try SessionMessages.decode(SessionMessages.encode(message))
            #expect(type(of: decoded).type == type(of: message).type)
            #expect(SessionMessages.encode(decoded) == SessionMessages.encode(message))
        }
    }
}
