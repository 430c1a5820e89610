import LanbridgeProtocol
import Testing

struct GatewayProofTests {
    let token = Array("correct horse".utf8)
    let bridgeNonce = Array(UInt8(0)..<32), gatewayNonce = Array(UInt8(32)..<64)

    /// Values from Python's hmac module (PROTOCOL.md §12.1 gives the same vector).
    @Test func matchesAnIndependentHMAC() {
        #expect(
            Hex.encode(GatewayProof.gatewayProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce))
                == "e1210c56056878a44a0b5346ea60e1b749718f3dc7d41d49ccef930ca78c2616")
        #expect(
            Hex.encode(GatewayProof.bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce))
                == "661f6215d1ae2763f97ede4394c019a28d7ac62de1a3d77c7ce156adc0b71d5f")
    }

    @Test func theBridgeAcceptsOnlyTheRightProofForItsOwnChallenge() throws {
        let answer = try #require(GatewayProof.answer(challenge: Hex.encode(bridgeNonce), token: token))
        let nonce = try GatewayProof.verify(header: answer.header, token: token, bridgeNonce: bridgeNonce)
        #expect(answer.expectedBridgeProof == GatewayProof.bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: nonce))
        #expect(throws: GatewayProof.Failure.wrong) { try GatewayProof.verify(header: answer.header, token: Array("other".utf8), bridgeNonce: bridgeNonce) }
        #expect(throws: GatewayProof.Failure.wrong, "a replay to another challenge") {
            try GatewayProof.verify(header: answer.header, token: token, bridgeNonce: gatewayNonce)
        }
        #expect(throws: GatewayProof.Failure.missing) { try GatewayProof.verify(header: nil, token: token, bridgeNonce: bridgeNonce) }
        #expect(throws: GatewayProof.Failure.malformed) { try GatewayProof.verify(header: "zz", token: token, bridgeNonce: bridgeNonce) }
        #expect(GatewayProof.answer(challenge: "short", token: token) == nil)
    }
}
