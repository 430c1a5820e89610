import LanbridgeCrypto
@testable import LanbridgeProtocol
import Testing
import TestSupport

/// Two sessions wired back to back, sans I/O.
struct Pair {
    var node: SecureSession
    var bridge: SecureSession
    var nodeResult: SecureSession.HandshakeResult?
    var bridgeResult: SecureSession.HandshakeResult?
    var nodeInbox: [[UInt8]] = []
    var bridgeInbox: [[UInt8]] = []

    static let nodeKey = X25519.KeyPair.generate()
    static let bridgeKey = X25519.KeyPair.generate()

    init(
        nodeVersions: VersionRange = .supported, bridgeVersions: VersionRange = .supported,
        invite: SecureSession.Invite? = nil, bridgeInvites: [SecureSession.Invite] = [],
        tamper: (inout [UInt8]) -> Void = { _ in }
    ) throws {
        var opening: [UInt8]
        (node, opening) = try SecureSession.initiate(with: Self.nodeKey, versions: nodeVersions, invite: invite)
        bridge = SecureSession(
            responderWith: Self.bridgeKey, versions: bridgeVersions,
            inviteLookup: { id in
                bridgeInvites.first { $0.id == id }?.psk
            })
        tamper(&opening)
        try deliver(toBridge: opening)
    }

    mutating func deliver(toBridge bytes: [UInt8]) throws {
        for output in try bridge.receive(bytes) {
            switch output {
            case let .send(wire): try deliver(toNode: wire)
            case let .established(result): bridgeResult = result
            case let .message(m): bridgeInbox.append(m)
            }
        }
    }

    mutating func deliver(toNode bytes: [UInt8]) throws {
        for output in try node.receive(bytes) {
            switch output {
            case let .send(wire): try deliver(toBridge: wire)
            case let .established(result): nodeResult = result
            case let .message(m): nodeInbox.append(m)
            }
        }
    }

    mutating func authorizeBoth() {
        node.authorize()
        bridge.authorize()
    }
}

struct SecureSessionTests {
    @Test func xxHandshakeAuthenticatesBothStaticKeys() throws {
        let pair = try Pair()
        let node = try #require(pair.nodeResult), bridge = try #require(pair.bridgeResult)
        #expect(node.remoteStaticKey == Pair.bridgeKey.publicKey)
        #expect(bridge.remoteStaticKey == Pair.nodeKey.publicKey)
        #expect(node.handshakeHash == bridge.handshakeHash)
        #expect(node.version == 1 && bridge.handshake == .xx)
    }

    @Test(arguments: [0, 1, 100, Chunking.maxChunkData - 1, Chunking.maxChunkData, Chunking.maxChunkData + 1, 3 * Chunking.maxChunkData + 7, 1 << 20])
    func messagesOfEverySizeRoundTrip(size: Int) throws {
        var pair = try Pair()
        pair.authorizeBoth()
        let message = SecureRandom.bytes(size)
        try pair.deliver(toBridge: try pair.node.seal(message))
        try pair.deliver(toNode: try pair.bridge.seal(message.reversed()))
        #expect(pair.bridgeInbox == [message])
        #expect(pair.nodeInbox == [message.reversed()])
    }

    @Test func bytesArrivingOneAtATimeStillFormMessages() throws {
        var (node, opening) = try SecureSession.initiate(with: Pair.nodeKey)
        var bridge = SecureSession(responderWith: Pair.bridgeKey)
        var toNode: [UInt8] = []
        for byte in opening {
            for case let .send(wire) in try bridge.receive([byte]) { toNode += wire }
        }
        var toBridge: [UInt8] = []
        for byte in toNode {
            for case let .send(wire) in try node.receive([byte]) { toBridge += wire }
        }
        for byte in toBridge { _ = try bridge.receive([byte]) }
        #expect(node.isEstablished && bridge.isEstablished)
        let wire = try node.seal(Array("hello".utf8))
        var got: [SecureSession.Output] = []
        for byte in wire { got += try bridge.receive([byte]) }
        #expect(got == [.message(Array("hello".utf8))])
    }

    @Test func inviteHandshakeNeedsTheRightSecret() throws {
        let invite = SecureSession.Invite(secret: .random(count: 16))
        let pair = try Pair(invite: invite, bridgeInvites: [invite])
        #expect(pair.bridgeResult?.handshake == .invite(id: invite.id))

        // Same ID, different secret: the PSK mixed at message 3 differs, so the bridge cannot decrypt it.
        let forged = SecureSession.Invite(secret: .random(count: 16))
        let impostor = SecureSession.Invite(secret: forged.secret, id: invite.id, psk: forged.psk)
        #expect(throws: TransportError.handshakeFailed(.decryptionFailed)) {
            try Pair(invite: impostor, bridgeInvites: [invite])
        }
        #expect(throws: TransportError.unknownInvite) {
            try Pair(invite: invite, bridgeInvites: [])
        }
    }

    @Test func aDowngradedVersionOfferBreaksTheHandshake() throws {
        let wide = VersionRange(min: 1, max: 2)!
        #expect(try Pair(nodeVersions: wide, bridgeVersions: wide).nodeResult?.version == 2)
        // A man in the middle rewrites "max 2" to "max 1" in the cleartext preamble.
        #expect(throws: TransportError.handshakeFailed(.decryptionFailed)) {
            try Pair(nodeVersions: wide, bridgeVersions: wide) { opening in opening[2 + 5] = 1 }
        }
    }

    @Test func disjointVersionsAreRefused() {
        #expect(throws: TransportError.noCommonVersion(offered: VersionRange(min: 2, max: 3)!, supported: .supported)) {
            try Pair(nodeVersions: VersionRange(min: 2, max: 3)!)
        }
    }

    @Test func tamperedReplayedAndReorderedFramesFailAuthentication() throws {
        var pair = try Pair()
        let first = try pair.node.seal([1]), second = try pair.node.seal([2])

        var tampered = first
        tampered[5] ^= 0x01
        var victim = pair.bridge
        #expect(throws: TransportError.decryptionFailed) { try victim.receive(tampered) }
        #expect(throws: TransportError.closed, "a failed session stays failed") { try victim.receive(first) }

        victim = pair.bridge
        #expect(throws: TransportError.decryptionFailed, "reordered") { try victim.receive(second) }

        try pair.deliver(toBridge: first)
        #expect(throws: TransportError.decryptionFailed, "replayed") { try pair.bridge.receive(first) }
    }

    @Test func unauthorisedPeersAreHeldToTheSmallLimit() throws {
        var pair = try Pair()
        let big = [UInt8](repeating: 7, count: TransportLimits.preAuthorization + 1)
        #expect(throws: TransportError.messageTooLarge(size: big.count, limit: TransportLimits.preAuthorization)) {
            try pair.node.seal(big)
        }
        // A node that lifted its own limit still cannot push a large frame at an unpaired-state bridge:
        // the frame header alone is refused, before the body is buffered.
        pair.node.authorize()
        let wire = try pair.node.seal(big)
        #expect(throws: TransportError.frameTooLarge(length: big.count + 1 + 16, limit: TransportLimits.preAuthorization + 17)) {
            try pair.bridge.receive(Array(wire.prefix(2)))
        }
    }

    @Test func messagesOverTheConfiguredMaximumAreRefusedWhileArriving() throws {
        var (node, opening) = try SecureSession.initiate(with: Pair.nodeKey, limits: .init(maxMessageSize: 1 << 20))
        var bridge = SecureSession(responderWith: Pair.bridgeKey, limits: .init(maxMessageSize: 100_000))
        var toBridge: [UInt8] = []
        for case let .send(w) in try bridge.receive(opening) { for case let .send(w3) in try node.receive(w) { toBridge = w3 } }
        _ = try bridge.receive(toBridge)
        node.authorize()
        bridge.authorize()
        let wire = try node.seal([UInt8](repeating: 1, count: 200_000))
        // The second chunk pushes the running total past the limit; the rest is never read.
        #expect(throws: TransportError.messageTooLarge(size: 2 * Chunking.maxChunkData, limit: 100_000)) {
            try bridge.receive(wire)
        }
    }

    @Test func garbageAndTruncationGiveReasons() throws {
        var bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.badPreamble("not a lanbridge client (no LNBR magic)")) {
            try bridge.receive(FrameDecoder.frame(Array("GET / HTTP/1.1\r\n".utf8)))
        }
        bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.frameTooLarge(length: 0xFFFF, limit: TransportLimits.preAuthorization)) {
            try bridge.receive([0xFF, 0xFF])
        }
        bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.frameTooShort(length: 0)) { try bridge.receive([0, 0]) }

        bridge = SecureSession(responderWith: Pair.bridgeKey)
        _ = try bridge.receive([0, 40, 1, 2, 3])
        #expect(throws: TransportError.truncatedFrame(received: 5, expected: 42)) { try bridge.receiveEOF() }

        bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.peerClosedDuringHandshake) { try bridge.receiveEOF() }
    }

    @Test func nonEmptyHandshakePayloadsAreRejected() throws {
        var (node, _) = try SecureSession.initiate(with: Pair.nodeKey)
        _ = node
        // Hand-build a message 1 that carries a payload.
        let preamble = Preamble(versions: .supported, handshake: .xx)
        var handshake = try HandshakeState(protocolName: .xx, role: .initiator, prologue: preamble.prologue, staticKey: Pair.nodeKey)
        let message1 = try handshake.writeMessage(payload: [42])
        var bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.unexpectedHandshakePayload("message 1 must be empty")) {
            try bridge.receive(FrameDecoder.frame(preamble.bytes) + FrameDecoder.frame(message1))
        }
    }

    @Test func sealingBeforeTheHandshakeIsAnError() throws {
        var bridge = SecureSession(responderWith: Pair.bridgeKey)
        #expect(throws: TransportError.notEstablished) { try bridge.seal([1]) }
    }
}
