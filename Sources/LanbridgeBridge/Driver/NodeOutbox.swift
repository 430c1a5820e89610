import LanbridgeCore
import LanbridgeTransport
import NIOCore

/// A message for a node, and the invoke it carries if any.
struct NodeOutbound {
    var bytes: [UInt8]
    var invokeID: String?
}

/// What a node's channel has not written yet, bounded (issue 61 §4: a node that stopped reading
/// while the gateway kept invoking it with 0.9 MB params cost the bridge memory without end).
///
/// It sits above `SecureChannelHandler`, holding plaintext: messages go down to be sealed and
/// written only while the channel is writable (its write buffer under the high water mark), so
/// what waits here is not yet encrypted, and an invoke that timed out meanwhile can leave
/// (`Withdraw`) without breaking the session's nonces. Past `limit` bytes the core is told, and
/// refuses new invokes to the node (NODE_BACKLOGGED, retryable) until half of it has drained.
/// What a node is owed is bounded by `limit` plus the channel's high water mark plus one message.
final class NodeOutbox: ChannelDuplexHandler {
    typealias InboundIn = SecureChannelInbound
    typealias InboundOut = SecureChannelInbound
    typealias OutboundIn = NodeOutbound
    typealias OutboundOut = [UInt8]

    /// Drops an invoke from the outbox if it has not gone down yet.
    struct Withdraw { let invokeID: String }

    private let limit: Int
    private let report: (Bool) -> Void
    private var queue = CircularBuffer<(message: NodeOutbound, promise: EventLoopPromise<Void>?)>(initialCapacity: 1)
    private(set) var queuedBytes = 0
    private var backlogged = false

    /// `report`: called with true when more than `limit` bytes wait, false when half have gone.
    init(limit: Int, report: @escaping (Bool) -> Void) { (self.limit, self.report) = (limit, report) }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let message = unwrapOutboundIn(data)
        if queue.isEmpty, context.channel.isWritable { return context.write(wrapOutboundOut(message.bytes), promise: promise) }
        queue.append((message, promise))
        queuedBytes += message.bytes.count
        if !backlogged, queuedBytes > limit {
            backlogged = true
            report(true)
        }
    }

    func flush(context: ChannelHandlerContext) {
        drain(context: context)
        context.flush()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            drain(context: context)
            context.flush()
        }
        context.fireChannelWritabilityChanged()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let withdraw = event as? Withdraw else { return context.triggerUserOutboundEvent(event, promise: promise) }
        var kept = CircularBuffer<(message: NodeOutbound, promise: EventLoopPromise<Void>?)>(initialCapacity: queue.count)
        for entry in queue {
            if entry.message.invokeID == withdraw.invokeID {
                queuedBytes -= entry.message.bytes.count
                entry.promise?.fail(ChannelError.ioOnClosedChannel)
            } else {
                kept.append(entry)
            }
        }
        queue = kept
        settle()
        promise?.succeed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        while let entry = queue.popFirst() { entry.promise?.fail(ChannelError.ioOnClosedChannel) }
        queuedBytes = 0
    }

    private func drain(context: ChannelHandlerContext) {
        while context.channel.isWritable, let entry = queue.popFirst() {
            queuedBytes -= entry.message.bytes.count
            context.write(wrapOutboundOut(entry.message.bytes), promise: entry.promise)
        }
        settle()
    }

    private func settle() {
        if backlogged, queuedBytes <= limit / 2 {
            backlogged = false
            report(false)
        }
    }
}
