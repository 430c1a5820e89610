import Logging
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeState
import LanbridgeCrypto
import LanbridgeTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// The LAN side of one relay connection (after TLS): reads the head, asks the core, dials the
/// canvas host, and from then on moves bytes as its `CanvasExchange` decides, both ways.
final class CanvasFrontHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case readingHead([UInt8])
        /// Bytes after an upgrade's head wait here while the capability is looked up and the host dialled.
        case deciding(early: [UInt8])
        case relaying(upstream: any Channel)
        /// A kept connection's answer is being written; its next head is read once it is.
        case resting
        case closed
    }

    private let relay: CanvasRelay
    private let id: Int
    private let ticket: DescriptorGate.Ticket?
    private var state = State.readingHead([])
    private var exchange: CanvasExchange?
    /// What the core said of the request's capability (kept for a retry with a fresh upstream one).
    private var use: CanvasUse?
    private var node: Fingerprint?
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// The last write to the node, so a close waits for what came before it.
    private var lastWrite: EventLoopFuture<Void>?
    /// The node sent bytes behind a plain request's head (pipelining): never read as a request, so
    /// the connection is not kept after this answer.
    private var pipelined = false
    /// The request being answered is the live-reload upgrade (its early bytes are frames, held).
    private var upgrading = false

    init(relay: CanvasRelay, id: Int, ticket: DescriptorGate.Ticket?) {
        (self.relay, self.id, self.ticket) = (relay, id, ticket)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        // Slowloris: the whole head within canvasHeadMs of the accept, TLS included.
        deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(relay.configuration.limits[.canvasHeadMs]))) { [relay] in
            relay.refused("canvasHeadMs", peer: channel.remoteAddress)
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let limit = relay.configuration.limits[.canvasMaxHeaderBytes]
        switch state {
        case var .readingHead(head):
            state = .closed  // so that `head` grows in place, not copied (set again below)
            let before = head.count
            head.append(contentsOf: buffer.readBytes(length: min(buffer.readableBytes, limit + 4 - head.count)) ?? [])
            guard let end = CanvasRequest.endOfHead(head, from: before - 3) else {
                if head.count > limit { return refuse(context, status: 431, reason: "canvasMaxHeaderBytes") }
                state = .readingHead(head)
                return
            }
            decide(context, head: Array(head[..<end]), early: Array(head[end...]) + (buffer.readBytes(length: buffer.readableBytes) ?? []))
        case var .deciding(early):
            state = .closed  // as above
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            if !upgrading, !bytes.isEmpty { pipelined = true }
            early += bytes
            guard early.count <= limit else { return refuse(context, status: 431, reason: "canvasMaxHeaderBytes") }
            state = .deciding(early: early)
        case .relaying:
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            if !upgrading, !bytes.isEmpty { pipelined = true }
            perform(exchange?.fromNode(bytes) ?? [])
        case .resting, .closed:
            // Not read while resting (autoRead is off until the answer is written); dropped if it comes.
            if buffer.readableBytes > 0, case .resting = state { pipelined = true }
        }
    }

    private func decide(_ context: ChannelHandlerContext, head: [UInt8], early: [UInt8]) {
        let request: CanvasRequest
        do { request = try CanvasRequest(head: head) } catch {
            return refuse(context, status: 404, reason: error.reason)
        }
        // One request at a time: after a plain request's head the node is not read until its answer
        // is written (what it sent behind the head is dropped, never sent on, and the connection is
        // not kept). An upgrade's next bytes wait for the host.
        if !request.upgrade { context.channel.setOption(.autoRead, value: false).whenFailure { _ in } }
        if !request.upgrade, !early.isEmpty { pipelined = true }
        upgrading = request.upgrade
        state = .deciding(early: request.upgrade ? early : [])
        guard request.upgrade ? early.count <= relay.configuration.limits[.canvasMaxHeaderBytes] : true else {
            return refuse(context, status: 431, reason: "canvasMaxHeaderBytes")
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay.lookUp(request.capability).hop(to: context.eventLoop).whenComplete { result in
            let (handler, context) = bound.value
            guard case .deciding = handler.state else { return }
            switch result {
            case let .success(use):
                switch use.lookup {
                case let .granted(node): handler.forward(context, request, node: node, use: use)
                case .rateLimited: handler.refuse(context, status: 429, reason: "canvasRequestsPerMinute")
                case .expired: handler.refuse(context, status: 404, reason: "expired_capability")
                case .unknown: handler.refuse(context, status: 404, reason: "unknown_capability")
                }
            case .failure:
                handler.refuse(context, status: 404, reason: "unknown_capability")
            }
        }
    }

    private func forward(_ context: ChannelHandlerContext, _ request: CanvasRequest, node: Fingerprint, use: CanvasUse) {
        if let kept = self.node {
            // A kept connection serves the node it was proven for, and only while it holds its slot.
            guard kept == node else { return refuse(context, status: 404, reason: "canvas_other_node") }
            guard relay.resume(id, node: node) else { return finish(context) }
        } else {
            guard relay.proven(id, ticket: ticket, node: node) else { return refuse(context, status: 429, reason: "canvasConnectionsPerNode") }
        }
        self.node = node
        if use.upstream == nil, relay.configuration.upstreamNeedsCapability {
            return refuse(context, status: 503, reason: "no_upstream_capability")
        }
        deadline?.cancel()
        let limits = relay.configuration.limits
        if !request.upgrade {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: .milliseconds(Int64(limits[.canvasRequestMs]))) { [relay] in
                relay.refused("canvasRequestMs", peer: channel.remoteAddress)
                channel.close(promise: nil)
            }
        }
        // Behind OpenClaw's canvas host a plain request may meet 401 once (the gateway's capability
        // lapsed): it is asked again with a fresh one, the node none the wiser.
        send(context, request, use: use, retry: relay.configuration.upstreamNeedsCapability && !request.upgrade)
    }

    /// Dials the canvas host and sends the request, with `use.upstream` in its path.
    private func send(_ context: ChannelHandlerContext, _ request: CanvasRequest, use: CanvasUse, retry: Bool) {
        let limits = relay.configuration.limits
        let origin = CanvasRelay.origin(of: context.channel.localAddress)
        var response = CanvasResponseReader.Settings(
            upstreamCapability: use.upstream, nodeCapability: request.capability, maxBodyBytes: limits[.canvasMaxResponseBytes],
            maxHeadBytes: limits[.canvasMaxHeaderBytes], upstreamOrigins: relay.configuration.upstreamOrigins, relayOrigin: origin,
            added: [("content-security-policy", CanvasContentPolicy.header(relayOrigin: origin, allowed: use.origins))])
        response.holdUnauthorized = retry
        response.keepAlive = request.keepAlive && !pipelined && limits[.canvasKeepAliveMs] > 0
        self.use = use
        exchange = CanvasExchange(request: request, response: response, maskKey: SecureRandom.bytes(4), maxHeld: limits[.canvasMaxHeaderBytes])
        let head = request.upstreamHead(host: relay.configuration.upstream.hostHeader, upstreamCapability: use.upstream)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay.dialUpstream(on: context.eventLoop, front: self).whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case let .success(upstream):
                guard case let .deciding(early) = handler.state else { return upstream.close(promise: nil) }
                handler.state = .relaying(upstream: upstream)
                upstream.write(ByteBuffer(string: head), promise: nil)
                handler.perform(handler.exchange?.fromNode(early) ?? [])
                upstream.flush()
                handler.relay.driverMetrics.canvasRelayed()
            case .failure:
                handler.refuse(context, status: 502, reason: "upstream_unreachable")
            }
        }
    }

    /// A short, fixed answer; the connection closes after it. Nothing went upstream.
    private func refuse(_ context: ChannelHandlerContext, status: Int, reason: String) {
        relay.refused(reason, peer: context.channel.remoteAddress)
        state = .closed
        deadline?.cancel()
        // Nothing more is read (or decrypted) from a refused connection.
        context.channel.setOption(.autoRead, value: false).whenFailure { _ in }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: CanvasExchange.refusal(status)))).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
    }

    // MARK: - The exchange's actions

    /// Carries out what the exchange decided; called on this connection's loop (the upstream is on it too).
    private func perform(_ actions: [CanvasExchange.Action]) {
        guard let context else { return }
        for action in actions {
            switch action {
            case let .toNode(bytes):
                lastWrite = context.write(wrapOutboundOut(ByteBuffer(bytes: bytes)))
            case let .toHost(bytes):
                guard case let .relaying(upstream) = state else { continue }
                upstream.write(ByteBuffer(bytes: bytes), promise: nil)
                // The canvas host reads slowly: stop reading the node until it catches up.
                if !upstream.isWritable { context.channel.setOption(.autoRead, value: false).whenFailure { _ in } }
            case let .close(refused):
                if let refused { relay.refused(refused, peer: context.channel.remoteAddress) }
                finish(context)
            case .retry:
                retry(context)
            case .finished:
                rest(context)
            }
        }
        context.flush()
        if case let .relaying(upstream) = state { upstream.flush() }
    }

    /// The canvas host refused the gateway's capability: the host's side goes, a fresh capability
    /// is asked for (`node.canvas.capability.refresh`), and the request is sent once more with it.
    private func retry(_ context: ChannelHandlerContext) {
        guard case let .relaying(upstream) = state, let node, let request = exchange?.request, var use else { return finish(context) }
        state = .deciding(early: [])
        upstream.close(promise: nil)
        relay.refused("upstream_capability_lapsed", peer: context.channel.remoteAddress)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay.refreshUpstream(node).hop(to: context.eventLoop).whenComplete { result in
            let (handler, context) = bound.value
            guard case .deciding = handler.state else { return }
            guard case let .success(fresh?) = result else { return handler.refuse(context, status: 502, reason: "upstream_capability_refused") }
            use.upstream = fresh
            handler.send(context, request, use: use, retry: false)
        }
    }

    /// The answer ended cleanly on a kept connection: the host's side goes now; once the whole
    /// answer is written the next head is read, within `canvasKeepAliveMs`. Bytes the node sent
    /// meanwhile make it close instead: nothing sent behind a head is read as a request.
    private func rest(_ context: ChannelHandlerContext) {
        guard case let .relaying(upstream) = state, let node, !pipelined else { return finish(context) }
        state = .resting
        deadline?.cancel()
        upstream.close(promise: nil)
        (exchange, use) = (nil, nil)
        let written = lastWrite ?? context.eventLoop.makeSucceededVoidFuture()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.hop(to: context.eventLoop).whenComplete { result in
            let (handler, context) = bound.value
            guard case .resting = handler.state else { return }
            guard case .success = result, !handler.pipelined, handler.relay.rest(handler.id, node: node) else { return handler.finish(context) }
            handler.state = .readingHead([])
            handler.lastWrite = nil
            let channel = context.channel
            let keepAlive = Int64(handler.relay.configuration.limits[.canvasKeepAliveMs])
            handler.deadline = context.eventLoop.scheduleTask(in: .milliseconds(keepAlive)) {
                // Quiet since its answer: an ordinary end. A head begun and not finished: slowloris.
                let (handler, _) = bound.value
                if case let .readingHead(head) = handler.state, !head.isEmpty { handler.relay.refused("canvasHeadMs", peer: channel.remoteAddress) }
                channel.close(promise: nil)
            }
            channel.setOption(.autoRead, value: true).whenFailure { _ in }
        }
    }

    /// Both sides close once what was written to them is out.
    private func finish(_ context: ChannelHandlerContext) {
        let upstream: (any Channel)? = if case let .relaying(upstream) = state { upstream } else { nil }
        state = .closed
        deadline?.cancel()
        context.channel.setOption(.autoRead, value: false).whenFailure { _ in }
        context.flush()
        upstream?.flush()
        upstream?.close(promise: nil)
        let channel = context.channel
        if let lastWrite { lastWrite.whenComplete { _ in channel.close(promise: nil) } } else { channel.close(promise: nil) }
    }

    /// A read from the canvas host (its handler calls this on the same loop).
    func fromHost(_ buffer: ByteBuffer) {
        guard let context, case .relaying = state else { return }
        // Most reads of a body pass as they came: one buffer, not copied.
        if let after = buffer.withUnsafeReadableBytes({ exchange?.passesUnchanged($0) }) {
            lastWrite = context.write(wrapOutboundOut(buffer))
            if !after.isEmpty { perform(after) }
            return
        }
        var buffer = buffer
        perform(exchange?.fromHost(buffer.readBytes(length: buffer.readableBytes) ?? []) ?? [])
    }

    func hostReadComplete(_ upstream: any Channel) {
        guard let context else { return }
        context.flush()
        if !context.channel.isWritable { upstream.setOption(.autoRead, value: false).whenFailure { _ in } }
    }

    func hostClosed() {
        guard case .relaying = state else { return }  // resting: its own close of the host's side
        perform(exchange?.hostClosed() ?? [])
    }

    /// Caught up with what the node sent (a live-reload socket's frames): read the node again.
    func hostWritable() {
        guard let context, case .relaying = state, exchange?.isSocket == true else { return }
        context.channel.setOption(.autoRead, value: true).whenFailure { _ in }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The LAN reader is slow: stop reading from the canvas host until it catches up.
        if case let .relaying(upstream) = state { upstream.setOption(.autoRead, value: context.channel.isWritable).whenFailure { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            // A live-reload socket is quiet until a page changes; it lives as long as the capability.
            if exchange?.isSocket == true { return }
            relay.refused("canvasIdleMs", peer: context.channel.remoteAddress)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        if case let .relaying(upstream) = state { upstream.close(promise: nil) }
        state = .closed
        relay.closed(id, node: node)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
