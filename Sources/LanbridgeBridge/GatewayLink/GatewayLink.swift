import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The bridge's link to its gateway: dials it as a WebSocket client, answers its requests through
/// the `Bridge`, posts node events, and carries nodes' calls. When the link drops, the gateway's
/// invokes in flight fail with `UNAVAILABLE` at once, nodes stay connected, and the link redials
/// with capped exponential backoff (PROTOCOL.md §12.1).
final class GatewayLink: GatewayUplink, Sendable {
    struct Backoff: Sendable {
        var initial: TimeInterval = 0.25
        var maximum: TimeInterval = 30
    }

    private let endpoint: GatewayEndpoint
    /// Replaced on SIGHUP (a rotated token file); the next connection uses it.
    private let tokenBox: NIOLockedValueBox<SecureBytes>
    private var token: SecureBytes { tokenBox.withLockedValue { $0 } }
    private let auth: BridgeConfiguration.GatewayAuth
    private let owners: Set<UInt32>
    private let tls: WebSocketClient.TLS?
    private let bridge: Bridge
    private let logger: Logger
    private let backoff: Backoff
    private let maxMessageSize: Int
    private let callTimeout: TimeInterval = 30

    private struct State {
        var outbox: AsyncStream<[ArraySlice<UInt8>]>.Continuation?
        /// Ends the current link (to redial with a new token).
        var closeLink: (@Sendable () -> Void)?
        var calls: [String: CheckedContinuation<Result<JSONValue?, ErrorMessage>, Never>] = [:]
        var nextCall = 0
    }
    private let state = NIOLockedValueBox(State())

    init(_ gateway: BridgeConfiguration.Gateway, bridge: Bridge, maxMessageSize: Int, backoff: Backoff = Backoff(), logger: Logger) {
        (endpoint, auth, owners) = (gateway.endpoint, gateway.auth, gateway.owners)
        tokenBox = NIOLockedValueBox(gateway.token)
        tls = gateway.endpoint.secure ? .init(trustRootsFile: gateway.trustRootsFile) : nil
        (self.bridge, self.maxMessageSize, self.backoff, self.logger) = (bridge, maxMessageSize, backoff, logger)
    }

    /// A new token (SIGHUP): the current link goes down and the next one proves the new token.
    func replaceToken(_ new: SecureBytes) {
        tokenBox.withLockedValue { $0 = new }
        state.withLockedValue { $0.closeLink }?()
    }

    /// Keeps the link up until the task is cancelled.
    func run(hello: JSONValue) async {
        var delay = backoff.initial
        var failures = 0
        while !Task.isCancelled {
            await bridge.setGatewayStatus("connecting to \(endpoint)")
            let started = Date()
            let reason: String
            do {
                try await connectOnce(hello: hello)
                reason = "the gateway closed the link"
            } catch {
                reason = "\(error)"
            }
            lost()
            if Task.isCancelled { break }
            if Date().timeIntervalSince(started) > 10 { (delay, failures) = (backoff.initial, 0) }
            failures += 1
            let wait = delay * Double.random(in: 0.8...1.2)
            await bridge.setGatewayStatus("disconnected: \(reason); retrying in \(String(format: "%.1f", wait)) s")
            // The first failure is news; a gateway that stays down should not flood the journal.
            logger.log(level: failures <= 1 || failures % 20 == 0 ? .warning : .debug,
                       "gateway link down (\(reason)); retrying in \(String(format: "%.1f", wait)) s", metadata: ["gateway": "\(endpoint)"])
            try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            delay = min(delay * 2, backoff.maximum)
        }
        await bridge.setGatewayStatus("off")
    }

    /// Nothing, not even the upgrade request, goes to a listener whose owner is not allowed; with
    /// the proof, the token itself never goes at all, and nothing else does until the gateway has
    /// proved it knows the token.
    private func connectOnce(hello: JSONValue) async throws {
        let bridgeNonce = SecureRandom.bytes(GatewayProof.nonceLength)
        let headers: [(String, String)] = switch auth {
        case .proof: [(GatewayProof.challengeHeader, Hex.encode(bridgeNonce))]
        case .bearer: [("Authorization", token.withUnsafeBytes { "Bearer " + String(decoding: $0, as: UTF8.self) })]
        }
        let gatewayNonce = NIOLockedValueBox<[UInt8]>([])
        let (token, owners) = (token, owners)
        let checkOwner: @Sendable (any Channel) -> EventLoopFuture<String?> = { channel in GatewayOwner.check(channel, allowed: owners) }
        let checkProof: @Sendable (HTTPResponseHead) throws -> Void = { response in
            let nonce = try GatewayProof.verify(header: response.headers[GatewayProof.proofHeader].first, token: token, bridgeNonce: bridgeNonce)
            gatewayNonce.withLockedValue { $0 = nonce }
        }
        let connection = try await WebSocketClient.connect(
            to: endpoint.target, path: endpoint.path, headers: headers, tls: tls, maxMessageSize: maxMessageSize,
            verifyPeer: endpoint.secure ? nil : checkOwner, verifyResponse: auth == .bearer ? nil : checkProof)
        var hello = hello
        if auth == .proof {
            let proof = GatewayProof.bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce.withLockedValue { $0 })
            hello = hello.merging(["proof": .string(Hex.encode(proof))])
        }
        try await connection.run { writer, messages in
            let (outbox, continuation) = AsyncStream.makeStream(of: [ArraySlice<UInt8>].self, bufferingPolicy: .bufferingNewest(4096))
            state.withLockedValue { state in
                state.outbox = continuation
                state.closeLink = { Task { try? await writer.close(code: .goingAway, reason: "token rotated") } }
            }
            defer { continuation.finish() }
            logger.info("gateway link up", metadata: ["gateway": "\(endpoint)"])
            await bridge.setGatewayStatus("connected to \(endpoint)")
            post(.event(name: GatewayMethod.helloEvent, payload: hello))
            // The reader says why the link ended (a close code and reason); a write that fails
            // because the gateway just closed only says "closed channel", so it waits for that.
            let reader = Task {
                for try await message in messages { self.received(message) }
            }
            let writing = Task {
                for await frame in outbox { try await writer.send(text: frame) }
            }
            defer { writing.cancel() }
            try await withTaskCancellationHandler {
                try await reader.value
            } onCancel: {
                reader.cancel()
            }
        }
    }

    private func received(_ bytes: [UInt8]) {
        let frame: GatewayFrame
        do throws(GatewayFrame.DecodingError) { frame = try GatewayFrame.decode(bytes) } catch {
            logger.notice("bad frame from the gateway: \(error)")
            if let id = error.requestID {
                post(.response(id: id, result: .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: error.description))))
            }
            return
        }
        switch frame {
        case let .request(id, method, params):
            Task {
                let answer = await bridge.respond(method: method, params: params, origin: .gateway)
                self.send(GatewayFrame.response(id: id, answer: answer))
            }
        case let .response(id, result):
            guard let waiter = state.withLockedValue({ $0.calls.removeValue(forKey: id) }) else {
                return logger.notice("the gateway answered an unknown call", metadata: ["id": "\(id)"])
            }
            waiter.resume(returning: result)
        case let .event(name, _):
            logger.debug("gateway event \(name)")
        }
    }

    /// The link dropped: calls waiting for the gateway fail now, and so do its invokes in flight.
    private func lost() {
        let waiting = state.withLockedValue { state in
            state.outbox?.finish()
            state.outbox = nil
            state.closeLink = nil
            defer { state.calls.removeAll() }
            return Array(state.calls.values)
        }
        let error = ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway link dropped", retryable: true)
        waiting.forEach { $0.resume(returning: .failure(error)) }
        Task { await bridge.gatewayLost() }
    }

    // MARK: - GatewayUplink

    func post(_ frame: GatewayFrame) {
        send([ArraySlice(frame.encoded())])
    }

    /// Queues a frame for the writer. A gateway that stops reading fills the queue (4096 frames);
    /// the oldest frame is then dropped, and said so, rather than the bridge's memory growing.
    private func send(_ parts: [ArraySlice<UInt8>]) {
        let outbox = state.withLockedValue { $0.outbox }
        if case .dropped = outbox?.yield(parts) {
            logger.warning("the gateway is not reading: dropped the oldest queued frame")
        }
    }

    func call(method: String, params: JSONValue?) async -> Result<JSONValue?, ErrorMessage> {
        let id: String? = state.withLockedValue { state in
            guard state.outbox != nil else { return nil }
            state.nextCall += 1
            return "b\(state.nextCall)"
        }
        guard let id else {
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway is not connected", retryable: true))
        }
        let timeout = callTimeout
        let timer = Task {
            try await Task.sleep(for: .seconds(timeout))
            let waiter = self.state.withLockedValue { $0.calls.removeValue(forKey: id) }
            waiter?.resume(returning: .failure(ErrorMessage(code: ErrorMessage.timeout, message: "the gateway did not answer \(method) in time", retryable: true)))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let registered = state.withLockedValue { state -> Bool in
                guard state.outbox != nil else { return false }
                state.calls[id] = continuation
                return true
            }
            if registered {
                post(.request(id: id, method: method, params: params))
            } else {
                continuation.resume(returning: .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway link dropped", retryable: true)))
            }
        }
    }
}
