import FoundationEssentials
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The bridge's link to its gateway: dials it as a WebSocket client on the bridge's event loop and
/// puts a `GatewayLinkHandler` on top, which carries frames to and from the `BridgeDriver`. When
/// the link drops, the gateway's invokes in flight fail with `UNAVAILABLE` at once, nodes stay
/// connected, and the link redials with capped exponential backoff (PROTOCOL.md §12.1).
final class GatewayLink: Sendable {
    private let endpoint: GatewayEndpoint
    /// Replaced on SIGHUP (a rotated token file); the next connection uses it.
    private let tokenBox: NIOLockedValueBox<SecureBytes>
    private var token: SecureBytes { tokenBox.withLockedValue { $0 } }
    private let auth: BridgeConfiguration.GatewayAuth
    private let dialer: GatewayDialer
    private let driver: BridgeDriver
    private let logger: Logger
    /// The schedule's settings; a copy runs in each `run`.
    private let backoff: Backoff
    private let maxMessageSize: Int
    /// The link now up, to end it when the token changes.
    private let current = NIOLockedValueBox<(any Channel)?>(nil)
    /// The wait before the next dial, while there is one: `redialNow` ends it early.
    private let waiting = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)

    init(
        _ gateway: BridgeConfiguration.Gateway, driver: BridgeDriver, maxMessageSize: Int,
        backoff: Backoff, logger: Logger
    ) {
        (endpoint, auth) = (gateway.endpoint, gateway.auth)
        tokenBox = NIOLockedValueBox(gateway.token)
        dialer = GatewayDialer(gateway)
        (self.driver, self.maxMessageSize, self.backoff, self.logger) = (driver, maxMessageSize, backoff, logger)
    }

    /// The redial schedule the limits set: doubling from `gatewayRedialMinMs` to `gatewayRedialMaxMs`,
    /// starting over after a link that lasted 10 s.
    static func backoff(_ limits: BridgeSettings.Limits) -> Backoff {
        let first = limits.seconds(.gatewayRedialMinMs)
        return Backoff(initial: first, maximum: max(first, limits.seconds(.gatewayRedialMaxMs)), resetAfter: 10)
    }

    /// A new token (SIGHUP): the current link goes down and the next one proves the new token.
    func replaceToken(_ new: SecureBytes) {
        tokenBox.withLockedValue { $0 = new }
        guard let channel = current.withLockedValue({ $0 }) else { return }
        channel.eventLoop.execute {
            (try? channel.pipeline.syncOperations.handler(type: GatewayLinkHandler.self))?.close(reason: "token rotated")
        }
    }

    /// `lanbridge gateway reconnect`: a link that is down dials again now, not after its backoff.
    /// False when the link is up or already dialling.
    func redialNow() -> Bool {
        guard let promise = Self.take(waiting) else { return false }
        promise.succeed()
        return true
    }

    /// The wait's promise, once: whichever of the timer, `redialNow` and cancellation comes first
    /// completes it, the others find nothing.
    private static func take(_ waiting: NIOLockedValueBox<EventLoopPromise<Void>?>) -> EventLoopPromise<Void>? {
        waiting.withLockedValue { promise in
            defer { promise = nil }
            return promise
        }
    }

    /// Keeps the link up until the task is cancelled.
    func run(hello: JSONValue) async {
        var backoff = self.backoff
        // The last reason: each new one is news (a wrong token after "nothing listens").
        var logged: String?
        while !Task.isCancelled {
            driver.submit(.gatewayStatus("connecting to \(endpoint)"), order: .now)
            let started = Date()
            let reason: String
            do {
                reason = try await connectOnce(hello: hello)
                logged = nil  // it was up: its end is news whatever the reason
            } catch is CancellationError {
                break
            } catch {
                reason = GatewayLinkFailure.describe(error, endpoint: endpoint)
            }
            if Task.isCancelled { break }
            let wait = backoff.wait(lasted: Date().timeIntervalSince(started))
            let failures = backoff.failures
            let next = ISO8601Text.string(Date().addingTimeInterval(wait))
            driver.submit(.gatewayStatus("down: \(reason); next try at \(next) (lanbridge gateway reconnect tries now)"), order: .now)
            // A new reason is news; the same one again is not, but says it still holds every 20th
            // time. The backoff between dials is what throttles the news.
            let news = logged != reason
            logged = reason
            logger.log(
                level: news || failures % 20 == 0 ? .warning : .debug,
                "gateway link down: \(reason); retrying in \(NumberText.fixed(wait)) s", metadata: ["gateway": "\(endpoint)"])
            await pause(seconds: wait)
            backoff.grow()
        }
        driver.submit(.gatewayStatus("off"), order: .now)
    }

    /// Waits out the backoff, or less if `redialNow` or cancellation comes first.
    private func pause(seconds: Double) async {
        let loop = driver.loop
        let promise = loop.makePromise(of: Void.self)
        let waiting = waiting
        waiting.withLockedValue { $0 = promise }
        let timer = loop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { Self.take(waiting)?.succeed() }
        await withTaskCancellationHandler {
            try? await promise.futureResult.get()
        } onCancel: {
            Self.take(waiting)?.succeed()
        }
        timer.cancel()
    }

    /// Nothing, not even the upgrade request, goes to a listener whose owner is not allowed; with
    /// the proof, the token itself never goes at all, and nothing else does until the gateway has
    /// proved it knows the token. Returns why the link ended.
    private func connectOnce(hello: JSONValue) async throws -> String {
        let bridgeNonce = SecureRandom.bytes(GatewayProof.nonceLength)
        let headers: [(String, String)] =
            switch auth {
            case .proof: [(GatewayProof.challengeHeader, Hex.encode(bridgeNonce))]
            case .bearer: [("Authorization", token.withUnsafeBytes { "Bearer " + String(decoding: $0, as: UTF8.self) })]
            }
        let gatewayNonce = NIOLockedValueBox<[UInt8]>([])
        let (token, auth, driver, logger) = (token, auth, driver, logger)
        let checkProof: @Sendable (HTTPResponseHead) throws -> Void = { response in
            let nonce = try GatewayProof.verify(header: response.headers[GatewayProof.proofHeader].first, token: token, bridgeNonce: bridgeNonce)
            gatewayNonce.withLockedValue { $0 = nonce }
        }
        let ending = GatewayLinkHandler.Ending()
        let channel = try await dialer.connect(
            headers: headers, on: driver.loop, maxMessageSize: maxMessageSize,
            verifyResponse: auth == .bearer ? nil : checkProof
        ) { channel in
            var hello = hello
            if auth == .proof {
                let proof = GatewayProof.bridgeProof(token: token, bridgeNonce: bridgeNonce, gatewayNonce: gatewayNonce.withLockedValue { $0 })
                hello = hello.merging(["proof": .string(Hex.encode(proof))])
            }
            // Answers may be large (a snapshot): the link counts as backed up past a few of them.
            try channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 1 << 20, high: 4 << 20))
            try channel.pipeline.syncOperations.addHandler(
                GatewayLinkHandler(driver: driver, generation: driver.nextLinkGeneration(), hello: hello, ending: ending, logger: logger))
        }
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: GatewayLinkHandler.self).start()
        }.get()
        current.withLockedValue { $0 = channel }
        defer { current.withLockedValue { $0 = nil } }
        logger.info("gateway link up", metadata: ["gateway": "\(endpoint)"])
        driver.submit(.gatewayStatus("connected to \(endpoint)"), order: .now)
        try await withTaskCancellationHandler {
            try? await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
        try Task.checkCancellation()
        return ending.value ?? "the gateway closed the link"
    }
}
