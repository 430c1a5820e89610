#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeNode
import LanbridgeProtocol

/// A lanbridge in memory, for an app's own tests: give it to `NodeClient` as its transport and
/// drive pairing, invokes, the background and revocation without sockets or a daemon.
///
///     let bridge = FakeBridge()
///     var configuration = NodeClient.Configuration(stateDirectory: dir, details: details)
///     configuration.transport = bridge
///     let client = try NodeClient(configuration: configuration)
///     Task { try await client.run(host: "bridge.test", port: 1) }
///     let request = await bridge.nextPairingRequest()
///     try await bridge.approve(request.requestId)
///     let answer = try await bridge.invoke(request.nodeID, "device.echo", params: ["hi": 1])
///
/// The client runs its real code above the secure session (pairing with the verification code,
/// the pin, handlers, app state, calls); the fake plays the bridge's side of PROTOCOL.md §9 and
/// §10, including the fast-fail of foreground-only commands while the app is in the background.
/// It does not run Noise: the handshake hash is random per connection.
public actor FakeBridge: NodeTransport {
    /// A pairing request the operator would see in `lanbridge nodes pending`.
    public struct PairingRequest: Sendable, Equatable {
        /// What `approve` and `reject` take.
        public let requestId: String
        /// The node's ID (its key's fingerprint), as `NodeClient.nodeID`.
        public let nodeID: String
        /// The 6-digit code the node shows; the same the operator would compare.
        public let code: String
        /// What the node said about itself.
        public let details: NodeDetails
    }

    /// Something the bridge saw a node do, in order (`next(_:)` awaits them).
    public enum Observation: Sendable, Equatable {
        /// A node revealed its code and waits for the operator.
        case pairingRequested(PairingRequest)
        /// Paired and authenticated: invokes may be sent.
        case connected(nodeID: String)
        /// The node moved to the foreground or background.
        case appState(nodeID: String, foreground: Bool)
        /// The node sent an event for the gateway.
        case event(nodeID: String, event: String, payload: JSONValue?)
        /// The node called the gateway (answered by `answerCalls(with:)`).
        case gatewayCall(nodeID: String, method: String, params: JSONValue?, idempotencyKey: String?)
        /// The node registered where to wake it, accepted as the bridge would check it.
        case pushRegistered(nodeID: String, PushRegistration)
        /// The node's connection ended.
        case disconnected(nodeID: String)
    }

    /// How the fake's gateway answers a node's `call`: a result, or nil to never answer (to test
    /// the client's deadline).
    public typealias Gateway = @Sendable (_ method: String, _ params: JSONValue?) async -> Result<JSONValue?, LanbridgeError>?

    /// The bridge's public key, and so the fingerprint a node pins.
    public nonisolated let publicKey: [UInt8]
    /// The bridge's fingerprint, as `lanbridge identity` shows it.
    public nonisolated var fingerprint: Fingerprint { Fingerprint(publicKey: publicKey) }
    /// The name nodes see in `welcome`.
    public nonisolated let name: String
    /// Commands refused with `NODE_BACKGROUND_UNAVAILABLE` while a node that declared
    /// `requiresForeground` is in the background (the bridge's default list).
    public var foregroundCommands = CommandPattern.foregroundByDefault

    private var paired: Set<String> = []
    private var inviteSecrets: Set<[UInt8]> = []
    private var links: [String: Link] = [:]
    private var pending: [String: (nodeID: String, code: String)] = [:]
    private var invokes: [String: (nodeID: String, continuation: CheckedContinuation<Result<JSONValue?, LanbridgeError>, Never>)] = [:]
    private var gateway: Gateway = { method, _ in
        .failure(LanbridgeError(code: LanbridgeError.unavailable, message: "no gateway behind the fake bridge for \(method)", retryable: true))
    }
    private var log: [Observation] = []
    private var cursor = 0
    /// Each takes an observation (and resumes its caller) or declines it.
    private var waiters: [(Observation) -> Bool] = []
    private var counter = 0

    /// One node's connection, as the bridge's session for it.
    private struct Link {
        let connection: Int
        let continuation: AsyncThrowingStream<NodeTransportEvent, any Error>.Continuation
        let nodeId: Fingerprint
        let handshakeHash: [UInt8]
        var invite: [UInt8]?
        var details: NodeDetails?
        var commitment: [UInt8]?
        var bridgeNonce: [UInt8]?
        var requestId: String?
        var authenticated = false
        var foreground = true
    }

    /// A bridge with a fresh key.
    public init(name: String = "Fake bridge") {
        self.name = name
        publicKey = X25519.KeyPair.generate().publicKey
    }

    // MARK: - What a test does as the operator and the gateway

    /// An invite URI for this bridge, as `lanbridge invite` prints (single use).
    public func makeInvite(host: String = "bridge.test", port: Int = 18790) -> InviteURI {
        let secret = SecureRandom.bytes(16)
        inviteSecrets.insert(secret)
        return InviteURI(host: host, port: port, bridgeFingerprint: fingerprint, secret: secret)
    }

    /// Awaits the next pairing request (a node that revealed its code).
    public func nextPairingRequest() async -> PairingRequest {
        await next { if case let .pairingRequested(request) = $0 { request } else { nil } }
    }

    /// Awaits the next node to be paired and connected; returns its ID.
    @discardableResult
    public func nextConnection() async -> String {
        await next { if case let .connected(nodeID) = $0 { nodeID } else { nil } }
    }

    /// Awaits the next observation `extract` accepts (returns non-nil for), and returns what it
    /// made of it. Observations are taken in order: each call starts after the one the previous
    /// call took, and concurrent callers are served first come, first served.
    public func next<T: Sendable>(_ extract: @escaping @Sendable (Observation) -> T?) async -> T {
        if waiters.isEmpty {
            while cursor < log.count {
                cursor += 1
                if let value = extract(log[cursor - 1]) { return value }
            }
        }
        return await withCheckedContinuation { continuation in
            waiters.append { observation in
                guard let value = extract(observation) else { return false }
                continuation.resume(returning: value)
                return true
            }
        }
    }

    /// Approves a pending request, as `lanbridge nodes approve` does.
    public func approve(_ requestId: String) throws(LanbridgeError) {
        let nodeID = try takePending(requestId)
        paired.insert(nodeID)
        resolve(.approved, nodeID)
        authenticate(nodeID)
    }

    /// Rejects a pending request, as `lanbridge nodes reject` does.
    public func reject(_ requestId: String) throws(LanbridgeError) {
        let nodeID = try takePending(requestId)
        resolve(.rejected, nodeID)
        disconnect(nodeID)
    }

    /// Removes a node's pairing, as `lanbridge nodes revoke` does: a connected node hears `revoked`.
    public func revoke(_ nodeID: String) {
        paired.remove(nodeID)
        if let link = links[nodeID] { send(Revoked(nodeId: link.nodeId), to: nodeID) }
        disconnect(nodeID)
    }

    /// Drops a node's connection (a network failure); the client reconnects.
    public func disconnect(_ nodeID: String) {
        guard let link = links.removeValue(forKey: nodeID) else { return }
        link.continuation.finish()
        for (id, invoke) in invokes where invoke.nodeID == nodeID {
            invokes[id] = nil
            invoke.continuation.resume(returning: .failure(LanbridgeError(code: ErrorMessage.unavailable, message: "the node disconnected", retryable: true)))
        }
        record(.disconnected(nodeID: nodeID))
    }

    /// Whether `nodeID` is paired.
    public func isPaired(_ nodeID: String) -> Bool { paired.contains(nodeID) }

    /// Whether the node last said it is in the foreground (nil when it is not connected).
    public func isInForeground(_ nodeID: String) -> Bool? { links[nodeID].map(\.foreground) }

    /// Sets how the gateway answers nodes' calls (the default: `UNAVAILABLE`, no gateway).
    public func answerCalls(with gateway: @escaping Gateway) { self.gateway = gateway }

    /// Invokes a command on a connected node as the gateway would, and returns its payload; throws
    /// the node's error, `NODE_NOT_CONNECTED`, `NODE_BACKGROUND_UNAVAILABLE` or `UNAVAILABLE` if
    /// the connection drops first. No deadline: a handler that never returns hangs the test.
    /// Cancelling the calling task cancels the invoke as a gateway's `node.invoke.cancel` does:
    /// the node hears `invoke.cancel`, and this throws `CANCELLED` at once.
    public func invoke(
        _ nodeID: String, _ command: String, params: JSONValue? = nil,
        timeoutMs: Int = 30_000
    ) async throws(LanbridgeError) -> JSONValue? {
        guard let link = links[nodeID], link.authenticated else {
            throw LanbridgeError(code: ErrorMessage.nodeNotConnected, message: "\(nodeID) is not connected", retryable: true)
        }
        if !link.foreground, link.details?.flags.requiresForeground ?? true,
            foregroundCommands.contains(where: { $0.matches(command) })
        {
            throw LanbridgeError(
                code: ErrorMessage.backgroundUnavailable, message: "\(command) needs the foreground",
                retryable: true, retryAfterMs: 5000)
        }
        counter += 1
        let id = "i\(counter)"
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                invokes[id] = (nodeID, continuation)
                send(Invoke(id: id, command: command, params: params, timeoutMs: timeoutMs), to: nodeID)
            }
        } onCancel: {
            Task { await self.cancelInvoke(id) }
        }
        return try result.get()
    }

    private func cancelInvoke(_ id: String) {
        guard let (nodeID, continuation) = invokes.removeValue(forKey: id) else { return }
        send(InvokeCancel(id: id), to: nodeID)
        continuation.resume(returning: .failure(LanbridgeError(code: ErrorMessage.cancelled, message: "the invoke was cancelled")))
    }

    // MARK: - NodeTransport

    /// Opens an in-memory connection for `identity`; an invite this bridge did not make (or one
    /// used already) ends it before the handshake, as the real bridge does at the preamble.
    public func connect(host: String, port: Int, identity: X25519.KeyPair, invite: InviteURI?) async throws -> NodeConnection {
        let nodeId = Fingerprint(publicKey: identity.publicKey)
        let nodeID = nodeId.description
        let (events, continuation) = AsyncThrowingStream.makeStream(of: NodeTransportEvent.self, throwing: (any Error).self)
        if let invite, !inviteSecrets.contains(invite.secret) {
            continuation.finish()
            return NodeConnection(events: events, send: { _ in }, close: {})
        }
        disconnect(nodeID)  // a new connection with the same key replaces the old one
        counter += 1
        let link = Link(connection: counter, continuation: continuation, nodeId: nodeId, handshakeHash: SecureRandom.bytes(32), invite: invite?.secret)
        links[nodeID] = link
        continuation.yield(.established(bridgeKey: publicKey, handshakeHash: link.handshakeHash))
        send(Welcome(bridgeName: name, paired: paired.contains(nodeID), nodeId: nodeId), to: nodeID)
        if paired.contains(nodeID) { authenticate(nodeID) }
        let connection = link.connection
        return NodeConnection(
            events: events,
            send: { [weak self] bytes in await self?.received(bytes, from: nodeID, connection: connection) },
            close: { [weak self] in Task { await self?.closed(nodeID, connection: connection) } })
    }

    // MARK: - The bridge's side of the session

    private func received(_ bytes: [UInt8], from nodeID: String, connection: Int) {
        guard var link = links[nodeID], link.connection == connection else { return }
        guard let message = try? SessionMessages.decode(bytes) else {
            return send(ErrorMessage(code: ErrorMessage.badMessage, message: "unreadable message"), to: nodeID)
        }
        switch message {
        case let request as PairRequest where !link.authenticated:
            link.details = request.details
            link.commitment = try? Hex.decode(request.commitment)
            link.bridgeNonce = SecureRandom.bytes(VerificationCode.nonceLength)
            counter += 1
            link.requestId = "r\(counter)"
            links[nodeID] = link
            send(PairChallenge(requestId: link.requestId!, nonce: Hex.encode(link.bridgeNonce!), expiresAt: Date() + 300), to: nodeID)
        case let reveal as PairReveal where !link.authenticated:
            guard let commitment = link.commitment, let bridgeNonce = link.bridgeNonce, let requestId = link.requestId,
                let details = link.details, let nodeNonce = try? Hex.decode(reveal.nonce),
                VerificationCode.verify(commitment: commitment, handshakeHash: link.handshakeHash, nodeNonce: nodeNonce)
            else {
                send(ErrorMessage(code: ErrorMessage.pairingFailed, message: "the commitment did not match"), to: nodeID)
                return disconnect(nodeID)
            }
            let code = VerificationCode.code(handshakeHash: link.handshakeHash, nodeNonce: nodeNonce, bridgeNonce: bridgeNonce)
            pending[requestId] = (nodeID, code)
            send(PairPending(requestId: requestId, expiresAt: Date() + 300), to: nodeID)
            record(.pairingRequested(PairingRequest(requestId: requestId, nodeID: nodeID, code: code, details: details)))
        case let redeem as InviteRedeem where !link.authenticated:
            guard let secret = link.invite, (try? Hex.decode(redeem.secret)) == secret, inviteSecrets.remove(secret) != nil else {
                send(ErrorMessage(code: ErrorMessage.pairingFailed, message: "the invite was refused"), to: nodeID)
                return disconnect(nodeID)
            }
            link.details = redeem.details
            links[nodeID] = link
            paired.insert(nodeID)
            resolve(.approved, nodeID)
            authenticate(nodeID)
        case let state as AppState where link.authenticated:
            link.foreground = state.foreground
            links[nodeID] = link
            record(.appState(nodeID: nodeID, foreground: state.foreground))
        case let event as NodeEvent where link.authenticated:
            record(.event(nodeID: nodeID, event: event.event, payload: event.payload))
        case let call as GatewayCall where link.authenticated:
            record(.gatewayCall(nodeID: nodeID, method: call.method, params: call.params, idempotencyKey: call.idempotencyKey))
            let gateway = self.gateway
            Task {
                guard let answer = await gateway(call.method, call.params) else { return }
                self.send(GatewayCallResult(id: call.id, result: answer.mapError(\.errorMessage)), to: nodeID)
            }
        case let register as PushRegister where link.authenticated:
            // The bridge's own check (PROTOCOL.md §9.6), so a test sees what the real one refuses.
            do throws(ErrorMessage) {
                record(.pushRegistered(nodeID: nodeID, try register.validated()))
                send(PushResult(id: register.id), to: nodeID)
            } catch {
                send(PushResult(id: register.id, error: error), to: nodeID)
            }
        case let result as InvokeResult where link.authenticated:
            invokes.removeValue(forKey: result.id)?.continuation.resume(
                returning: result.ok
                    ? .success(result.payload)
                    : .failure(LanbridgeError(result.error ?? ErrorMessage(code: ErrorMessage.commandFailed, message: "failed"))))
        case is Pong:
            break
        default:
            send(
                ErrorMessage(
                    code: link.authenticated ? ErrorMessage.badMessage : ErrorMessage.notPaired,
                    message: "\(type(of: message).type) is not expected now"), to: nodeID)
        }
    }

    private func authenticate(_ nodeID: String) {
        guard var link = links[nodeID] else { return }
        link.authenticated = true
        links[nodeID] = link
        record(.connected(nodeID: nodeID))
    }

    private func takePending(_ requestId: String) throws(LanbridgeError) -> String {
        guard let (nodeID, _) = pending.removeValue(forKey: requestId) else {
            throw LanbridgeError(code: "REQUEST_NOT_FOUND", message: "no pending request \(requestId)")
        }
        return nodeID
    }

    private func closed(_ nodeID: String, connection: Int) {
        guard links[nodeID]?.connection == connection else { return }
        disconnect(nodeID)
    }

    private func resolve(_ outcome: PairResolved.Outcome, _ nodeID: String) {
        guard let link = links[nodeID] else { return }
        send(PairResolved(outcome: outcome, nodeId: link.nodeId), to: nodeID)
    }

    private func send(_ message: some SessionMessage, to nodeID: String) {
        links[nodeID]?.continuation.yield(.message(SessionMessages.encode(message)))
    }

    private func record(_ observation: Observation) {
        log.append(observation)
        while let waiter = waiters.first, cursor < log.count {
            cursor += 1
            if waiter(log[cursor - 1]) { waiters.removeFirst() }
        }
    }
}
