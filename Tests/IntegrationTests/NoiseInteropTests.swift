import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeTransport
import LanbridgeProtocol
import Logging
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// Full handshakes and transport messages over real TCP between lanbridge (SwiftNIO) and an
/// independent implementation: Python's `noiseprotocol`, in both roles.
@Suite(.enabled(if: Python.hasModule("noise"), "needs Python's noiseprotocol (pip install noiseprotocol; scripts/test installs it)"))
struct NoiseInteropTests {
    static let peerScript = Repository.url("Tests/IntegrationTests/python/noise_peer.py").path
    static let sizes = [0, 1, 1000, Chunking.maxChunkData, Chunking.maxChunkData + 1, 300_000, 4 << 20]

    enum Mode: String, CaseIterable, Sendable { case xx, invite }

    @Test(arguments: Mode.allCases)
    func swiftBridgeAcceptsPythonNode(mode: Mode) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let bridgeKey = X25519.KeyPair.generate()
        let invite = SecureSession.Invite(secret: .random(count: 16))
        let (events, sink) = AsyncStream.makeStream(of: PeerEvent.self)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let session = SecureSession(responderWith: bridgeKey, inviteLookup: { id in id == invite.id ? invite.psk : nil })
                    try channel.pipeline.syncOperations.addHandlers(
                        // The test is about agreement, not speed: a Python peer on a loaded machine may take longer than a node would.
                        SecureChannelHandler(responder: session, handshakeTimeout: .seconds(120), logger: Logger(label: "test")), PeerRecorder(sink))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()

        let nodeKey = X25519.KeyPair.generate()
        var arguments = [Self.peerScript, "connect", String(server.localAddress!.port!), hex(nodeKey.privateKey)]
        if mode == .invite { arguments.append(hex(invite.secret)) }
        let python = try ChildProcess(URL(fileURLWithPath: Python.executable), arguments)
        try await exchange(events: events, python: python, localKey: bridgeKey, remoteKey: nodeKey, expectInvite: mode == .invite ? invite.id : nil)
        #expect(python.wait() == 0, "\(python.standardError)")
        try await server.close()
    }

    @Test(arguments: Mode.allCases)
    func swiftNodeConnectsToPythonBridge(mode: Mode) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let bridgeKey = X25519.KeyPair.generate(), nodeKey = X25519.KeyPair.generate()
        let invite = SecureSession.Invite(secret: .random(count: 16))
        var arguments = [Self.peerScript, "listen", hex(bridgeKey.privateKey)]
        if mode == .invite { arguments.append(hex(invite.secret)) }
        let python = try ChildProcess(URL(fileURLWithPath: Python.executable), arguments)
        let port = Int(try python.waitForLine { $0.hasPrefix("listening ") }.split(separator: " ")[1])!

        let (events, sink) = AsyncStream.makeStream(of: PeerEvent.self)
        let (session, opening) = try SecureSession.initiate(with: nodeKey, invite: mode == .invite ? invite : nil)
        _ = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        SecureChannelHandler(initiator: session, opening: opening, handshakeTimeout: .seconds(120), logger: Logger(label: "test")),
                        PeerRecorder(sink))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try await exchange(events: events, python: python, localKey: nodeKey, remoteKey: bridgeKey, expectInvite: mode == .invite ? invite.id : nil)
        #expect(python.wait() == 0, "\(python.standardError)")
    }

    /// Both sides agree on h and on each other's keys; messages of every size survive a round trip.
    private func exchange(
        events: AsyncStream<PeerEvent>, python: ChildProcess, localKey: X25519.KeyPair,
        remoteKey: X25519.KeyPair, expectInvite: [UInt8]?
    ) async throws {
        var iterator = events.makeAsyncIterator()
        guard case let .established(channel, result) = await iterator.next() else { Issue.record("no handshake"); return }
        let line = try python.waitForLine { $0.hasPrefix("handshake ") }.split(separator: " ").map(String.init)
        #expect(line[1] == Hex.encode(result.handshakeHash), "same handshake hash on both sides")
        #expect(line[3] == Hex.encode(localKey.publicKey), "python saw our static key")
        #expect(result.remoteStaticKey == remoteKey.publicKey, "we saw python's static key")
        #expect(line[5] == "1" && result.version == 1)
        if let expectInvite { #expect(result.handshake == .invite(id: expectInvite)) }

        guard case let .message(hello) = await iterator.next() else { Issue.record("no hello"); return }
        #expect(hello == Array("hello from python".utf8))

        try await channel.triggerUserOutboundEvent(SecureChannelHandler.Authorize()).get()
        for size in Self.sizes + [-1] {
            let message = size < 0 ? Array("bye".utf8) : SecureRandom.bytes(size)
            try await channel.writeAndFlush(message).get()
            guard case let .message(echo) = await iterator.next() else { Issue.record("no echo for \(size)"); return }
            #expect(echo == message.reversed(), "echo of \(size) bytes")
        }
    }

    private func hex(_ secret: SecureBytes) -> String { secret.withUnsafeBytes { Hex.encode($0) } }
}

enum PeerEvent: Sendable {
    case established(any Channel, SecureSession.HandshakeResult)
    case message([UInt8])
}

/// Forwards what the secure channel delivers into an AsyncStream for the test to await.
final class PeerRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = SecureChannelInbound
    let sink: AsyncStream<PeerEvent>.Continuation

    init(_ sink: AsyncStream<PeerEvent>.Continuation) {
        self.sink = sink
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .established(result): sink.yield(.established(context.channel, result))
        case let .message(message): sink.yield(.message(message))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        sink.finish()
    }
}
