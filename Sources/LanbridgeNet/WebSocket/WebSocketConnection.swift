import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// One WebSocket, either end, as whole text messages: fragments are joined (up to a size limit),
/// pings answered, and a close answered and ended. Both the bridge's gateway link and the
/// reference gateway use it.
public struct WebSocketConnection: Sendable {
    public let channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
    /// Clients mask what they send (RFC 6455 §5.3); servers must not.
    public let isClient: Bool

    public init(channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, isClient: Bool) {
        (self.channel, self.isClient) = (channel, isClient)
    }

    /// The pipeline handlers every lanbridge WebSocket gets after the upgrade.
    static func addAggregator(to channel: any Channel, maxMessageSize: Int) throws {
        try channel.pipeline.syncOperations.addHandler(
            NIOWebSocketFrameAggregator(
                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 4096, maxAccumulatedFrameSize: maxMessageSize))
    }

    /// Runs the connection: `body` gets a writer and the inbound text messages, and the socket
    /// closes when it returns.
    public func run(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (WebSocketWriter, AsyncThrowingStream<[UInt8], any Error>) async throws -> Void
    ) async throws {
        try await channel.executeThenClose { inbound, outbound in
            let writer = WebSocketWriter(outbound: outbound, isClient: isClient)
            let (messages, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await frame in inbound {
                            switch frame.opcode {
                            case .text, .binary:
                                continuation.yield(Array(buffer: frame.unmaskedData))
                            case .ping:
                                try await writer.write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
                            case .connectionClose:
                                try? await writer.close()
                                continuation.finish(throwing: frame.closeError)
                                return
                            default:
                                break
                            }
                        }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                defer { group.cancelAll() }
                try await body(writer, messages)
                try? await writer.close()
            }
        }
    }
}

/// Sends text messages on a WebSocket; safe to share between tasks.
public final class WebSocketWriter: Sendable {
    private let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
    private let isClient: Bool
    private let closed = NIOLockedValueBox(false)

    init(outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>, isClient: Bool) {
        (self.outbound, self.isClient) = (outbound, isClient)
    }

    public func send(text bytes: [UInt8]) async throws {
        try await write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: bytes)))
    }

    /// One text message from parts written back to back (a large payload spliced between a
    /// prefix and a suffix is copied once, into the frame).
    public func send(text parts: [ArraySlice<UInt8>]) async throws {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(parts.reduce(0) { $0 + $1.count })
        for part in parts { buffer.writeBytes(part) }
        try await write(WebSocketFrame(fin: true, opcode: .text, data: buffer))
    }

    /// Sends a close frame once: 1000 (normal) unless told otherwise.
    public func close(code: WebSocketErrorCode = .normalClosure, reason: String = "") async throws {
        guard
            closed.withLockedValue({
                let was = $0; $0 = true; return !was
            })
        else { return }
        try await write(.close(code, reason: reason))
    }

    func write(_ frame: WebSocketFrame) async throws {
        var frame = frame
        if isClient { frame.maskKey = .random() }
        try await outbound.write(frame)
    }
}
