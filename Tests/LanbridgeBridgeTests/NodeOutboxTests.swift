import LanbridgeCore
import NIOCore
import NIOEmbedded
import Testing

@testable import LanbridgeBridge

/// Issue 61 §4: what a node has not read is bounded, said, and left by an invoke that timed out.
struct NodeOutboxTests {
    final class Reports: @unchecked Sendable { var values: [Bool] = [] }

    func channel(limit: Int) throws -> (EmbeddedChannel, Reports) {
        let reports = Reports()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(NodeOutbox(limit: limit) { reports.values.append($0) })
        return (channel, reports)
    }

    func written(_ channel: EmbeddedChannel) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let bytes = try channel.readOutbound(as: [UInt8].self) { out.append(bytes) }
        return out
    }

    @Test func whileTheNodeReadsNothingWaits() throws {
        let (channel, reports) = try channel(limit: 100)
        channel.write(NodeOutbound(bytes: [1, 2, 3], invokeID: "a"), promise: nil)
        channel.flush()
        #expect(try written(channel) == [[1, 2, 3]] && reports.values.isEmpty)
    }

    @Test func pastTheLimitTheCoreIsToldAndAWithdrawnInvokeNeverGoesOut() throws {
        let (channel, reports) = try channel(limit: 100)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.write(NodeOutbound(bytes: Array(repeating: 1, count: 80), invokeID: "a"), promise: nil)
        channel.write(NodeOutbound(bytes: Array(repeating: 2, count: 30), invokeID: "b"), promise: nil)
        channel.flush()
        #expect(try written(channel).isEmpty, "nothing goes down while the channel is full")
        #expect(reports.values == [true], "110 bytes wait, over 100")
        // "a" timed out: it leaves, and the backlog is under half the limit again.
        channel.pipeline.triggerUserOutboundEvent(NodeOutbox.Withdraw(invokeID: "a"), promise: nil)
        #expect(reports.values == [true, false])
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try written(channel) == [Array(repeating: 2, count: 30)], "only b, in order")
    }
}
