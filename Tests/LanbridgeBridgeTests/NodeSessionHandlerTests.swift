@testable import LanbridgeBridge
@testable import LanbridgeCore
import LanbridgeProtocol
import LanbridgeTransport
import NIOCore
import NIOEmbedded
import Testing

/// Issue 21: a large message is read off the relay loop, and the node's order holds around it.
struct NodeSessionHandlerTests {
    /// Records what reaches the relay; large reads wait until the test finishes them.
    final class Recorder: NodeSessionDriver {
        let metrics = BridgeMetrics.disabled
        let loop: EmbeddedEventLoop
        var events: [String] = []
        var checks: [EventLoopPromise<SessionMessages.Checked>] = []

        init(loop: EmbeddedEventLoop) { self.loop = loop }

        func established(_ id: ConnectionID, _ handshake: SecureSession.HandshakeResult, address: String, peer: String) { events.append("established") }
        func submit(_ event: BridgeEvent, order: BridgeDriver.Order) {
            switch event {
            case let .received(bytes, _): events.append("message \(bytes.count)")
            case let .receivedRead(_, size, _): events.append("checked \(size)")
            default: events.append("other")
            }
        }
        func check(_ bytes: [UInt8]) -> EventLoopFuture<SessionMessages.Checked> {
            events.append("checking \(bytes.count)")
            checks.append(loop.makePromise())
            return checks[checks.count - 1].futureResult
        }
        func closed(_ id: ConnectionID) { events.append("closed") }
    }

    /// Counts the reads that get past the handler, toward the socket.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    func session() throws -> (EmbeddedChannel, Recorder, ReadCounter) {
        let channel = EmbeddedChannel()
        let recorder = Recorder(loop: channel.embeddedEventLoop)
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(NodeSessionHandler(driver: recorder, id: 1, address: "127.0.0.1"))
        return (channel, recorder, counter)
    }

    let large = [UInt8](repeating: 0x20, count: BridgeDriver.offLoopBytes)
    let small = [UInt8](repeating: 0x20, count: 100)
    let done = SessionMessages.Checked.failure(.notJSON)

    @Test func aLargeMessageIsReadOffTheLoopAndTheNodeStopsBeingReadMeanwhile() throws {
        let (channel, recorder, counter) = try session()
        try channel.writeInbound(SecureChannelInbound.message(small))
        try channel.writeInbound(SecureChannelInbound.message(large))
        try channel.writeInbound(SecureChannelInbound.message(small))
        #expect(recorder.events == ["message 100", "checking \(large.count)"], "what came after the large message waits for it")
        channel.read()
        #expect(counter.reads == 0, "no more reading from this node while its large message is read")
        recorder.checks[0].succeed(done)
        #expect(recorder.events == ["message 100", "checking \(large.count)", "checked \(large.count)", "message 100"])
        #expect(counter.reads == 1, "the read asked for meanwhile goes out now")
        channel.read()
        #expect(counter.reads == 2)
    }

    @Test func aCloseDuringTheReadComesAfterTheMessagesBeforeIt() throws {
        let (channel, recorder, counter) = try session()
        try channel.writeInbound(SecureChannelInbound.message(large))
        try channel.writeInbound(SecureChannelInbound.message(large))
        try channel.writeInbound(SecureChannelInbound.message(small))
        channel.read()
        channel.pipeline.fireChannelInactive()
        #expect(recorder.events == ["checking \(large.count)"])
        recorder.checks[0].succeed(done)
        #expect(recorder.events == ["checking \(large.count)", "checked \(large.count)", "checking \(large.count)"], "the second large one is read in turn")
        recorder.checks[1].succeed(done)
        #expect(recorder.events.suffix(3) == ["checked \(large.count)", "message 100", "closed"])
        #expect(counter.reads == 0, "a closed channel is not read again")
    }
}
