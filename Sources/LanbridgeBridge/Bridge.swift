import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOCore

/// The bridge's live state: one entry per connection, the pairing exchange for unpaired nodes, and
/// the reaction to changes the CLI makes in the state directory. All of it is isolated to this actor;
/// connections reach it through `open`, `receive` and `close`, in order, from their own tasks.
public actor Bridge {
    public typealias Outbound = NIOAsyncChannelOutboundWriter<[UInt8]>

    let configuration: BridgeConfiguration
    let identity: X25519.KeyPair
    let store: PairingStore
    let admission: Admission
    /// Live invites' PSKs, for the handshake, which runs on NIO's threads and must not touch files.
    let invites: InviteCache
    private let runtimeFile: RuntimeStatusFile
    private var runtime: RuntimeStatus
    private var logger: Logger
    private var connections: [Int: Connection] = [:]
    private var nextID = 0
    private var pingCounter = 0

    private enum Phase {
        /// Unpaired, XX: may only ask to pair.
        case unpaired
        /// Sent the challenge; waiting for the node to reveal the nonce it committed to.
        case challenged(requestId: String, commitment: [UInt8], bridgeNonce: [UInt8])
        /// The code is set; waiting for the operator.
        case waiting(requestId: String)
        /// Came in through an invite (XXpsk3): must redeem it with the secret.
        case invited(inviteID: [UInt8])
        case paired
    }

    private final class Connection {
        let id: Int
        let key: PublicKey
        let address: String
        let handshake: SecureSession.HandshakeResult
        let outbound: Outbound
        let channel: any Channel
        var phase: Phase
        var foreground = true
        let connectedAt = Date()
        var countsAsUnauthenticated = true

        init(id: Int, key: PublicKey, address: String, handshake: SecureSession.HandshakeResult, outbound: Outbound, channel: any Channel, phase: Phase) {
            (self.id, self.key, self.address, self.handshake, self.outbound, self.channel, self.phase) = (id, key, address, handshake, outbound, channel, phase)
        }

        var nodeId: Fingerprint { key.fingerprint }
        var isPaired: Bool { if case .paired = phase { true } else { false } }
    }

    /// `admission` and `invites` exist before the listener, which consults them from its first accept.
    init(configuration: BridgeConfiguration, identity: X25519.KeyPair, listening: [String],
         admission: Admission, invites: InviteCache, logger: Logger) {
        self.configuration = configuration
        self.identity = identity
        store = PairingStore(directory: configuration.stateDirectory)
        self.admission = admission
        self.invites = invites
        runtimeFile = RuntimeStatusFile(directory: configuration.stateDirectory)
        runtime = RuntimeStatus(bridgeName: configuration.name, listening: listening, startedAt: Date())
        self.logger = logger
    }

    // MARK: - Connections

    /// A connection finished its handshake. Returns its ID for `receive` and `close`.
    func open(_ handshake: SecureSession.HandshakeResult, address: String, outbound: Outbound, channel: any Channel) async -> Int {
        nextID += 1
        let key = PublicKey(bytes: handshake.remoteStaticKey)!
        let state: PairingState
        do { state = try store.read() } catch {
            logger.error("cannot read the pairing store: \(error)")
            admission.closed(unauthenticatedFrom: address)
            channel.close(promise: nil)
            return nextID
        }
        let phase: Phase = if case let .invite(id) = handshake.handshake { .invited(inviteID: id) }
            else if state.node(withKey: key) != nil { .paired } else { .unpaired }
        let connection = Connection(id: nextID, key: key, address: address, handshake: handshake, outbound: outbound, channel: channel, phase: phase)
        connections[connection.id] = connection
        if state.isBlocked(key) {
            logger.notice("refused blocked node", metadata: ["node": "\(key.fingerprint)", "peer": "\(address)"])
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingRejected, message: "this device is blocked"))
            return connection.id
        }
        if connection.isPaired {
            await becomePaired(connection)
        } else {
            logger.info("unpaired node connected", metadata: ["node": "\(connection.nodeId)", "peer": "\(address)"])
            await send(Welcome(bridgeName: configuration.name, paired: false, nodeId: connection.nodeId), to: connection)
        }
        return connection.id
    }

    func close(_ id: Int) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if connection.countsAsUnauthenticated { admission.closed(unauthenticatedFrom: connection.address) }
        if connection.isPaired, runtime.nodes[connection.nodeId.description] != nil,
           !connections.values.contains(where: { $0.nodeId == connection.nodeId && $0.isPaired }) {
            runtime.nodes[connection.nodeId.description] = nil
            publishRuntime()
            logger.info("node disconnected", metadata: ["node": "\(connection.nodeId)"])
        }
    }

    func receive(_ bytes: [UInt8], from id: Int) async {
        guard let connection = connections[id] else { return }
        let message: any SessionMessage
        do {
            message = try SessionMessages.decode(bytes)
        } catch {
            logger.notice("bad message: \(error)", metadata: ["node": "\(connection.nodeId)"])
            let reply = ErrorMessage(code: ErrorMessage.badMessage, message: "\(error)")
            if connection.isPaired { await send(reply, to: connection) } else { await fail(connection, reply) }
            return
        }
        switch message {
        case let ping as Ping:
            await send(Pong(id: ping.id), to: connection)
        case is Pong:
            break
        case let state as AppState where connection.isPaired:
            connection.foreground = state.foreground
            runtime.nodes[connection.nodeId.description]?.foreground = state.foreground
            publishRuntime()
            logger.info("node moved to the \(state.foreground ? "foreground" : "background")", metadata: ["node": "\(connection.nodeId)"])
        case let request as PairRequest:
            await pairingRequested(request, on: connection)
        case let reveal as PairReveal:
            await nonceRevealed(reveal, on: connection)
        case let redeem as InviteRedeem:
            await inviteRedeemed(redeem, on: connection)
        default:
            if connection.isPaired {
                await send(ErrorMessage(code: ErrorMessage.badMessage, message: "unexpected \(type(of: message).type) message"), to: connection)
            } else {
                // An unpaired key can do nothing but ask to pair: no detail, no metadata, no access.
                logger.notice("unpaired node sent \(type(of: message).type)", metadata: ["node": "\(connection.nodeId)"])
                await send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: connection)
            }
        }
    }

    // MARK: - Pairing by code

    private func pairingRequested(_ request: PairRequest, on connection: Connection) async {
        guard case .unpaired = connection.phase, let commitment = try? Hex.decode(request.commitment), commitment.count == 32 else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected pairing request"))
        }
        let details = request.details.sanitized()
        do {
            let pending = try store.update(actor: "bridge") { state in
                try state.requestPairing(key: connection.key, details: details, source: connection.address, now: Date(), timing: configuration.pairingTiming)
            }
            let bridgeNonce = SecureRandom.bytes(VerificationCode.nonceLength)
            connection.phase = .challenged(requestId: pending.requestId, commitment: commitment, bridgeNonce: bridgeNonce)
            logger.info("pairing requested", metadata: ["node": "\(connection.nodeId)", "request": "\(pending.requestId)", "name": "\(details.displayName)"])
            await send(PairChallenge(requestId: pending.requestId, nonce: Hex.encode(bridgeNonce), expiresAt: pending.expiresAt), to: connection)
        } catch let error as PairingError {
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)", retryable: error.isRetryable))
        } catch {
            logger.error("pairing store: \(error)")
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the bridge cannot record requests right now", retryable: true))
        }
    }

    private func nonceRevealed(_ reveal: PairReveal, on connection: Connection) async {
        guard case let .challenged(requestId, commitment, bridgeNonce) = connection.phase else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected reveal"))
        }
        let h = connection.handshake.handshakeHash
        guard let nodeNonce = try? Hex.decode(reveal.nonce), nodeNonce.count == VerificationCode.nonceLength,
              VerificationCode.verify(commitment: commitment, handshakeHash: h, nodeNonce: nodeNonce) else {
            logger.warning("pairing commitment did not match: possible man in the middle", metadata: ["node": "\(connection.nodeId)"])
            return await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the revealed nonce does not match its commitment"))
        }
        let code = VerificationCode.code(handshakeHash: h, nodeNonce: nodeNonce, bridgeNonce: bridgeNonce)
        do {
            let expiresAt = try store.update(actor: "bridge") { state -> Date in
                state.setCode(code, requestId: requestId)
                try state.refresh(requestId: requestId, now: Date(), timing: configuration.pairingTiming)
                return state.request(requestId)!.expiresAt
            }
            connection.phase = .waiting(requestId: requestId)
            await send(PairPending(requestId: requestId, expiresAt: expiresAt), to: connection)
        } catch {
            await resolveWaiting(connection, in: (try? store.read()) ?? PairingState())
        }
    }

    // MARK: - Pairing by invite

    private func inviteRedeemed(_ redeem: InviteRedeem, on connection: Connection) async {
        guard case let .invited(inviteID) = connection.phase, let secretBytes = try? Hex.decode(redeem.secret) else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected invite redemption"))
        }
        let secret = SecureBytes(copying: secretBytes)
        do {
            let node = try store.update(actor: "bridge") { state in
                try state.redeemInvite(id: inviteID, secret: secret, key: connection.key, details: redeem.details.sanitized(), now: Date())
            }
            logger.info("node paired by invite", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)"])
            await becomePaired(connection, announce: .approved)
        } catch {
            logger.notice("invite redemption refused: \(error)", metadata: ["node": "\(connection.nodeId)"])
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)"))
        }
    }

    // MARK: - Reacting to the store

    /// The CLI changed the files: tell waiting nodes the operator's decision, drop revoked ones.
    func storeChanged() async {
        let state: PairingState
        do { state = try store.read() } catch {
            logger.error("cannot read the pairing store: \(error)")
            return
        }
        invites.replace(with: state)
        for connection in connections.values {
            switch connection.phase {
            case .waiting, .challenged:
                await resolveWaiting(connection, in: state)
            case .paired where state.node(withKey: connection.key) == nil:
                logger.info("pairing revoked; dropping the node", metadata: ["node": "\(connection.nodeId)"])
                await send(Revoked(nodeId: connection.nodeId), to: connection)
                connection.channel.close(promise: nil)
                connections[connection.id] = nil
                runtime.nodes[connection.nodeId.description] = nil
                publishRuntime()
            default:
                break
            }
        }
    }

    private func resolveWaiting(_ connection: Connection, in state: PairingState) async {
        let requestId: String
        switch connection.phase {
        case let .waiting(id), let .challenged(id, _, _): requestId = id
        default: return
        }
        if state.node(withKey: connection.key) != nil {
            logger.info("pairing approved", metadata: ["node": "\(connection.nodeId)", "request": "\(requestId)"])
            await becomePaired(connection, announce: .approved)
        } else if state.request(requestId) == nil {
            let expired = state.pending.expired.contains { $0.requestId == requestId }
            logger.info("pairing \(expired ? "expired" : "rejected")", metadata: ["node": "\(connection.nodeId)", "request": "\(requestId)"])
            await send(PairResolved(outcome: expired ? .expired : .rejected, nodeId: connection.nodeId), to: connection)
            await fail(connection, expired
                ? ErrorMessage(code: ErrorMessage.pairingExpired, message: "the pairing request expired; ask again", retryable: true)
                : ErrorMessage(code: ErrorMessage.pairingRejected, message: "the operator rejected this device"))
        }
    }

    private func becomePaired(_ connection: Connection, announce outcome: PairResolved.Outcome? = nil) async {
        // One live session per node: a reconnect replaces the old one at once.
        for other in connections.values where other.id != connection.id && other.nodeId == connection.nodeId && other.isPaired {
            logger.info("node reconnected; replacing its old session", metadata: ["node": "\(connection.nodeId)"])
            await fail(other, ErrorMessage(code: ErrorMessage.replaced, message: "a newer session replaced this one"))
        }
        connection.phase = .paired
        if connection.countsAsUnauthenticated {
            connection.countsAsUnauthenticated = false
            admission.authenticated(from: connection.address)
        }
        try? await connection.channel.triggerUserOutboundEvent(SecureChannelHandler.Authorize()).get()
        if let outcome {
            await send(PairResolved(outcome: outcome, nodeId: connection.nodeId), to: connection)
        } else {
            await send(Welcome(bridgeName: configuration.name, paired: true, nodeId: connection.nodeId), to: connection)
        }
        _ = try? store.update(actor: "bridge") { $0.recordSeen(connection.nodeId, now: Date()) }
        runtime.nodes[connection.nodeId.description] = RuntimeStatus.Node(address: connection.address, foreground: connection.foreground, connectedAt: connection.connectedAt)
        publishRuntime()
        logger.info("node connected", metadata: ["node": "\(connection.nodeId)", "peer": "\(connection.address)"])
    }

    // MARK: - Timers

    /// Expires stale requests and keeps connected nodes' requests alive (up to the hard cap). Writes
    /// the store only when something is due: an expiry, or a waiting request past half its TTL.
    func tick(now: Date) async {
        let timing = configuration.pairingTiming
        let waiting = Set(connections.values.compactMap { c -> String? in if case let .waiting(id) = c.phase { id } else { nil } })
        guard let state = try? store.read() else { return }
        let due = state.pending.requests.contains { request in
            request.expiresAt <= now
                || (waiting.contains(request.requestId) && request.expiresAt.timeIntervalSince(now) < timing.timeToLive / 2
                    && request.expiresAt < request.createdAt.addingTimeInterval(timing.hardCap))
        }
        guard due else { return }
        _ = try? store.update(actor: "bridge") { state in
            for id in waiting { try? state.refresh(requestId: id, now: now, timing: timing) }
            _ = state.expire(now: now)
        }
        await storeChanged()
    }

    func pingAll() async {
        pingCounter += 1
        for connection in connections.values {
            await send(Ping(id: pingCounter), to: connection)
        }
    }

    func shutdown() {
        for connection in connections.values { connection.channel.close(promise: nil) }
        connections.removeAll()
        runtimeFile.remove()
    }

    func setAdvertising(_ status: String, name: String?) {
        runtime.mdns = status
        runtime.mdnsName = name
        publishRuntime()
    }

    func publishRuntime() {
        do { try runtimeFile.write(runtime) } catch { logger.warning("cannot write \(runtimeFile.url.path): \(error)") }
    }

    // MARK: - Sending

    private func send(_ message: some SessionMessage, to connection: Connection) async {
        do {
            try await connection.outbound.write(SessionMessages.encode(message))
        } catch {
            logger.debug("send failed: \(error)", metadata: ["node": "\(connection.nodeId)"])
        }
    }

    /// Sends a final error and closes the connection.
    private func fail(_ connection: Connection, _ error: ErrorMessage) async {
        await send(error, to: connection)
        connection.channel.close(promise: nil)
        close(connection.id)
    }
}

extension PairingError {
    var isRetryable: Bool {
        if case .tooManyPending = self { true } else { false }
    }
}
