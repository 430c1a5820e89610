import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeTransport
import LanbridgeProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Bad bytes over real TCP: the bridge closes the connection and logs why; nothing crashes.
struct SecureChannelHandlerTests {
    static let cases: [(String, [UInt8], String)] = [
        ("oversized frame header", [0xFF, 0xFF], "frame of 65535 bytes exceeds the 8192-byte limit"),
        ("HTTP instead of lanbridge", [0, 16] + Array("GET / HTTP/1.1\r\n".utf8), "not a lanbridge client"),
        ("truncated frame", [0, 40, 1, 2, 3], "connection ended mid-frame (5 of 42 bytes)"),
        (
            "garbage handshake", [0, 7] + Array("LNBR".utf8) + [1, 1, 1] + [0, 10] + [UInt8](repeating: 9, count: 10),
            "handshake failed: handshake message too short"
        ),
    ]

    @Test(arguments: cases.indices)
    func badInputClosesWithALoggedReason(index: Int) async throws {
        let (label, bytes, reason) = Self.cases[index]
        let logs = LogRecorder()
        let bridgeKey = X25519.KeyPair.generate()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let logger = Logger(label: "bridge") { _ in logs }
                    // A generous handshake deadline: these cases are about bad bytes, and a loaded
                    // machine must not turn them into timeouts (the timeout has its own test).
                    try channel.pipeline.syncOperations.addHandler(
                        SecureChannelHandler(responder: SecureSession(responderWith: bridgeKey), handshakeTimeout: .seconds(120), logger: logger))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()

        let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
        // The bridge may hang up as soon as it has read enough to refuse (an HTTP request line is
        // refused at its first bytes): the rest of our write then fails, which is not the test's
        // business; the logged reason is (CI saw "I/O on closed channel" here under load).
        _ = try? await client.writeAndFlush(ByteBuffer(bytes: bytes)).get()
        if label == "truncated frame" {
            try await client.close(mode: .output)  // the peer gives up half way through a frame
        }
        try await client.closeFuture.get()  // the bridge hung up on us
        let logged = await logs.waitForMessage(containing: reason)
        #expect(logged, "\(label): expected a log containing \"\(reason)\", got \(logs.messages)")
        try await server.close()
    }
}

/// A swift-log handler that keeps messages so tests can assert on the logged reason.
final class LogRecorder: LogHandler, @unchecked Sendable {
    private let lock = NIOLock()
    private var recorded: [String] = []
    private var waiters: [(String, CheckedContinuation<Bool, Never>)] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    var messages: [String] { lock.withLock { recorded } }

    func log(event: LogEvent) {
        let text = "\(event.message)"
        let ready = lock.withLock {
            recorded.append(text)
            let (done, waiting) = (waiters.filter { text.contains($0.0) }, waiters.filter { !text.contains($0.0) })
            waiters = waiting
            return done
        }
        for (_, continuation) in ready { continuation.resume(returning: true) }
    }

    /// Waits (bounded) for a message containing `text`; an event, with a 30 s guard against hangs.
    func waitForMessage(containing text: String) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let already = self.lock.withLock {
                        if self.recorded.contains(where: { $0.contains(text) }) { return true }
                        self.waiters.append((text, continuation))
                        return false
                    }
                    if already { continuation.resume(returning: true) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            self.lock.withLock {
                for (_, c) in self.waiters { c.resume(returning: false) }; self.waiters.removeAll()
            }
            return first
        }
    }
}

extension SecureChannelHandlerTests {
    @Test func aHandshakeThatStallsIsDropped() async throws {
        let logs = LogRecorder()
        let bridgeKey = X25519.KeyPair.generate()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        SecureChannelHandler(
                            responder: SecureSession(responderWith: bridgeKey), handshakeTimeout: .milliseconds(200),
                            logger: Logger(label: "bridge") { _ in logs }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        // A client that sends a valid preamble and then nothing. (Under load the deadline may pass
        // before the preamble is even written; the drop is what this test is about.)
        let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
        try? await client.writeAndFlush(ByteBuffer(bytes: FrameDecoder.frame(Preamble(versions: .supported, handshake: .xx).bytes))).get()
        try await client.closeFuture.get()
        #expect(await logs.waitForMessage(containing: "handshake not completed within"))
        try await server.close()
    }
}
