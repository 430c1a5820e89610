import LanbridgeCrypto

/// Mutual proof of the gateway token, so the token itself never crosses the link (PROTOCOL.md
/// §12.1), and the gateway proves itself first: a listener that does not know the token learns
/// nothing but a random challenge.
///
///     bridge → gateway  upgrade request   Lanbridge-Challenge: hex(Nb)
///     gateway → bridge  101 response      Lanbridge-Proof: hex(Ng) hex(HMAC-SHA-256(token, GATEWAY_LABEL || Nb || Ng))
///     bridge → gateway  bridge.hello      payload.proof = hex(HMAC-SHA-256(token, BRIDGE_LABEL || Nb || Ng))
///
/// The bridge sends nothing but the challenge until the gateway's proof checks out; the gateway
/// must act on nothing until the bridge's proof in `bridge.hello` checks out.
public enum GatewayProof {
    public static let challengeHeader = "Lanbridge-Challenge"
    public static let proofHeader = "Lanbridge-Proof"
    public static let gatewayLabel = Array("lanbridge-gateway-proof-v1".utf8)
    public static let bridgeLabel = Array("lanbridge-bridge-proof-v1".utf8)
    public static let nonceLength = 32

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case missing
        case malformed
        case wrong

        public var description: String {
            switch self {
            case .missing:
                "the gateway did not answer the token challenge (no \(GatewayProof.proofHeader) header): it does not speak lanbridge's proof, or it is not the gateway. Set gateway.auth to \"bearer\" only for a gateway that cannot, and only on a host you trust"
            case .malformed: "the gateway's \(GatewayProof.proofHeader) header is malformed"
            case .wrong: "the gateway's proof of the token is wrong: whatever listens there does not know the token"
            }
        }
    }

    public static func gatewayProof(token: some ContiguousByteStorage, bridgeNonce: [UInt8], gatewayNonce: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticate(key: token, gatewayLabel, bridgeNonce, gatewayNonce).withUnsafeBytes { Array($0) }
    }

    public static func bridgeProof(token: some ContiguousByteStorage, bridgeNonce: [UInt8], gatewayNonce: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticate(key: token, bridgeLabel, bridgeNonce, gatewayNonce).withUnsafeBytes { Array($0) }
    }

    /// The bridge's check of the gateway's answer; returns the gateway's nonce.
    public static func verify(header: String?, token: some ContiguousByteStorage, bridgeNonce: [UInt8]) throws(Failure) -> [UInt8] {
        guard let header else { throw .missing }
        let parts = header.split(separator: " ")
        guard parts.count == 2, let nonce = try? Hex.decode(String(parts[0])), let proof = try? Hex.decode(String(parts[1])),
            nonce.count == nonceLength, proof.count == 32
        else { throw .malformed }
        guard SecureMemory.constantTimeEqual(proof, gatewayProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: nonce)) else { throw .wrong }
        return nonce
    }

    /// The gateway's side: the header it answers a challenge with, and the proof it must then see.
    public static func answer(challenge: String?, token: some ContiguousByteStorage) -> (header: String, expectedBridgeProof: [UInt8])? {
        guard let challenge, let bridgeNonce = try? Hex.decode(challenge), bridgeNonce.count == nonceLength else { return nil }
        let gatewayNonce = SecureRandom.bytes(nonceLength)
        let proof = gatewayProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce)
        return (Hex.encode(gatewayNonce) + " " + Hex.encode(proof), bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce))
    }

    /// The gateway's side, after the upgrade: the bridge proof that its 101 answer implies.
    public static func expectedBridgeProof(challenge: String?, answer: String?, token: some ContiguousByteStorage) -> [UInt8]? {
        guard let challenge, let bridgeNonce = try? Hex.decode(challenge), let answer,
            let gatewayNonce = answer.split(separator: " ").first.flatMap({ try? Hex.decode(String($0)) })
        else { return nil }
        return bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce)
    }
}
