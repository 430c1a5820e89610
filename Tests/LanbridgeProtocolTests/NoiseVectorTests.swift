import Foundation
import LanbridgeCrypto
@testable import LanbridgeProtocol
import Testing
import TestSupport

/// The published cacophony vectors: every fundamental pattern (with psk modifiers) of our suite.
struct NoiseVectorTests {
    struct Vector: Decodable, CustomTestStringConvertible, Sendable {
        let protocol_name: String
        let init_prologue: String
        let init_psks: [String]?
        let init_static: String?
        let init_ephemeral: String
        let init_remote_static: String?
        let resp_prologue: String
        let resp_psks: [String]?
        let resp_static: String?
        let resp_ephemeral: String?
        let resp_remote_static: String?
        let handshake_hash: String?
        let messages: [Message]
        struct Message: Decodable, Sendable { let payload: String; let ciphertext: String }
        var testDescription: String { protocol_name }
    }

    static let all: [Vector] = {
        let url = Bundle.module.url(forResource: "Resources/cacophony-25519-ChaChaPoly-SHA256", withExtension: "json")!
        struct File: Decodable { let vectors: [Vector] }
        return try! JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }()

    /// Deferred patterns (X1N, …) are not implemented: lanbridge uses only XX and XXpsk3.
    static let supported = all.filter { (try? NoiseProtocolName($0.protocol_name)) != nil }

    @Test func theRequiredPatternsAreAmongTheSupportedVectors() {
        let names = Set(Self.supported.map(\.protocol_name))
        for required in ["Noise_XX_25519_ChaChaPoly_SHA256", "Noise_XXpsk3_25519_ChaChaPoly_SHA256", "Noise_NN_25519_ChaChaPoly_SHA256"] {
            #expect(names.contains(required))
        }
        #expect(Self.supported.count == 36, "15 fundamental patterns and 21 psk variants")
    }

    @Test(arguments: supported)
    func vector(_ v: Vector) throws {
        let name = try NoiseProtocolName(v.protocol_name)
        func keyPair(_ hex: String?) throws -> X25519.KeyPair? {
            try hex.map { try X25519.KeyPair(privateKey: SecureBytes(copying: Hex.decode($0))) }
        }
        var initiator = try HandshakeState(
            protocolName: name, role: .initiator, prologue: Hex.decode(v.init_prologue),
            staticKey: keyPair(v.init_static), remoteStaticKey: v.init_remote_static.map { try Hex.decode($0) },
            psks: (v.init_psks ?? []).map { SecureBytes(copying: try Hex.decode($0)) },
            fixedEphemeral: keyPair(v.init_ephemeral))
        var responder = try HandshakeState(
            protocolName: name, role: .responder, prologue: Hex.decode(v.resp_prologue),
            staticKey: keyPair(v.resp_static), remoteStaticKey: v.resp_remote_static.map { try Hex.decode($0) },
            psks: (v.resp_psks ?? []).map { SecureBytes(copying: try Hex.decode($0)) },
            fixedEphemeral: keyPair(v.resp_ephemeral))

        let handshakeLength = name.pattern.messages.count
        for (i, message) in v.messages.prefix(handshakeLength).enumerated() {
            let initiatorSends = i % 2 == 0
            let ciphertext =
                initiatorSends
                ? try initiator.writeMessage(payload: Hex.decode(message.payload))
                : try responder.writeMessage(payload: Hex.decode(message.payload))
            #expect(Hex.encode(ciphertext) == message.ciphertext, "handshake message \(i)")
            let payload = initiatorSends ? try responder.readMessage(ciphertext) : try initiator.readMessage(ciphertext)
            #expect(Hex.encode(payload) == message.payload)
        }
        #expect(initiator.isComplete && responder.isComplete)
        if let hash = v.handshake_hash {
            #expect(Hex.encode(initiator.handshakeHash) == hash)
            #expect(Hex.encode(responder.handshakeHash) == hash)
        }

        var initiatorCiphers = try initiator.split()
        var responderCiphers = try responder.split()
        for (i, message) in v.messages.dropFirst(handshakeLength).enumerated() {
            // One-way patterns only ever send from the initiator.
            let initiatorSends = name.pattern.isOneWay || (handshakeLength + i) % 2 == 0
            let plaintext = try Hex.decode(message.payload)
            let ciphertext =
                initiatorSends
                ? try initiatorCiphers.send.encryptWithAd([UInt8](), plaintext)
                : try responderCiphers.send.encryptWithAd([UInt8](), plaintext)
            #expect(Hex.encode(ciphertext) == message.ciphertext, "transport message \(i)")
            let decrypted =
                initiatorSends
                ? try responderCiphers.receive.decryptWithAd([UInt8](), ciphertext)
                : try initiatorCiphers.receive.decryptWithAd([UInt8](), ciphertext)
            #expect(decrypted == plaintext)
        }
    }
}
