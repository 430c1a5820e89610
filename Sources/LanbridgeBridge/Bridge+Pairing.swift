import Foundation
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeProtocol
import LanbridgeState

// Pairing, by code (PROTOCOL.md §9.2) and by invite (§9.3), for connections that are not paired yet.
extension Bridge {
    // MARK: - Pairing by code

    func pairingRequested(_ request: PairRequest, on connection: Connection) async {
        guard case .unpaired = connection.phase, let commitment = try? Hex.decode(request.commitment), commitment.count == 32 else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected pairing request"))
        }
        let now = Date()
        if let refusal = challengeLimits.admit(key: connection.key, address: connection.address, now: now) {
            logger.notice("pairing challenge refused: \(refusal)", metadata: meta(connection))
            return await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: refusal, retryable: false))
        }
        let details = request.details.sanitized()
        connection.claimedName = details.displayName
        do {
            let pending = try store.update(actor: "bridge") { state in
                try state.challenge(key: connection.key, details: details, source: connection.address, now: now, timing: configuration.pairingTiming)
            }
            if let lock = pending.locked {
                logger.warning("pairing request locked: \(lock.explanation)", metadata: meta(connection, ["request": "\(pending.requestId)"]))
                return await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: PairingError.requestLocked(pending.requestId, lock).description))
            }
            let bridgeNonce = SecureRandom.bytes(VerificationCode.nonceLength)
            connection.phase = .challenged(requestId: pending.requestId, commitment: commitment, bridgeNonce: bridgeNonce)
            logger.info("pairing requested", metadata: meta(connection, ["request": "\(pending.requestId)", "name": "\(details.displayName)",
                                                        "challenge": "\(pending.challenges)/\(PairingState.Limits.challengesPerRequest)"]))
            await send(PairChallenge(requestId: pending.requestId, nonce: Hex.encode(bridgeNonce), expiresAt: pending.expiresAt), to: connection)
        } catch let error as PairingError {
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)", retryable: error.isRetryable))
        } catch {
            logger.error("pairing store: \(error)")
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the bridge cannot record requests right now", retryable: true))
        }
    }

    func nonceRevealed(_ reveal: PairReveal, on connection: Connection) async {
        guard case let .challenged(requestId, commitment, bridgeNonce) = connection.phase else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected reveal"))
        }
        let h = connection.handshake.handshakeHash
        guard let nodeNonce = try? Hex.decode(reveal.nonce), nodeNonce.count == VerificationCode.nonceLength,
              VerificationCode.verify(commitment: commitment, handshakeHash: h, nodeNonce: nodeNonce) else {
            logger.warning("pairing commitment did not match: possible man in the middle; request locked",
                           metadata: meta(connection, ["request": "\(requestId)"]))
            do { try store.update(actor: "bridge") { $0.commitmentFailed(requestId: requestId) } } catch {
                logger.error("pairing store: \(error)")
            }
            return await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the revealed nonce does not match its commitment"))
        }
        let code = VerificationCode.code(handshakeHash: h, nodeNonce: nodeNonce, bridgeNonce: bridgeNonce)
        do {
            let expiresAt = try store.update(actor: "bridge") { state -> Date? in
                state.setCode(code, requestId: requestId)
                try state.refresh(requestId: requestId, now: Date(), timing: configuration.pairingTiming)
                return state.request(requestId)?.expiresAt
            }
            guard let expiresAt else { return await resolveWaiting(connection, in: (try? store.read()) ?? PairingState()) }
            connection.phase = .waiting(requestId: requestId)
            admission.waiting(connection.slot)
            await send(PairPending(requestId: requestId, expiresAt: expiresAt), to: connection)
        } catch {
            await resolveWaiting(connection, in: (try? store.read()) ?? PairingState())
        }
    }

    // MARK: - Pairing by invite

    func inviteRedeemed(_ redeem: InviteRedeem, on connection: Connection) async {
        guard case let .invited(inviteID) = connection.phase, let secretBytes = try? Hex.decode(redeem.secret) else {
            return await fail(connection, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected invite redemption"))
        }
        let secret = SecureBytes(copying: secretBytes)
        let details = redeem.details.sanitized()
        do {
            let node = try store.update(actor: "bridge") { state in
                try state.redeemInvite(id: inviteID, secret: secret, key: connection.key, details: details,
                                       defaultAccess: settings.defaultRules(forPlatform: details.platform), now: Date())
            }
            logger.info("node paired by invite", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)"])
            await becomePaired(connection, announce: .approved)
        } catch {
            logger.notice("invite redemption refused: \(error)", metadata: meta(connection))
            await fail(connection, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)"))
        }
    }

    func resolveWaiting(_ connection: Connection, in state: PairingState) async {
        let requestId: String
        switch connection.phase {
        case let .waiting(id), let .challenged(id, _, _): requestId = id
        default: return
        }
        if state.node(withKey: connection.key) != nil {
            logger.info("pairing approved", metadata: meta(connection, ["request": "\(requestId)"]))
            await becomePaired(connection, announce: .approved)
        } else if state.request(requestId) == nil {
            let expired = state.pending.expired.contains { $0.requestId == requestId }
            logger.info("pairing \(expired ? "expired" : "rejected")", metadata: meta(connection, ["request": "\(requestId)"]))
            await send(PairResolved(outcome: expired ? .expired : .rejected, nodeId: connection.nodeId), to: connection)
            await fail(connection, expired
                ? ErrorMessage(code: ErrorMessage.pairingExpired, message: "the pairing request expired; ask again", retryable: true)
                : ErrorMessage(code: ErrorMessage.pairingRejected, message: "the operator rejected this device"))
        }
    }

    func becomePaired(_ connection: Connection, announce outcome: PairResolved.Outcome? = nil) async {
        let replaced = pairedConnection(connection.nodeId).flatMap { $0.id != connection.id ? $0 : nil }
        connection.phase = .paired
        connection.announcedForeground = connection.foreground
        admission.release(connection.slot)
        connection.slot = nil
        // One live session per node: a reconnect replaces the old one at once. The node has not
        // gone away, so the gateway hears no `disconnected` for the old session.
        if let replaced {
            logger.info("node reconnected; replacing its old session", metadata: meta(connection))
            replaced.replaced = true
            await fail(replaced, ErrorMessage(code: ErrorMessage.replaced, message: "a newer session replaced this one"))
        }
        try? await connection.channel.triggerUserOutboundEvent(SecureChannelHandler.Authorize()).get()
        // The welcome (or the pairing's outcome) is the bridge's first message on a paired session
        // (§9.1): the session is findable for invokes and pings only once it has gone out.
        if let outcome {
            await send(PairResolved(outcome: outcome, nodeId: connection.nodeId), to: connection)
        } else {
            await send(Welcome(bridgeName: configuration.name, paired: true, nodeId: connection.nodeId), to: connection)
        }
        guard connections[connection.id] != nil else { return }  // it went away meanwhile
        sessions[connection.nodeId] = connection.id
        seen.insert(connection.nodeId)
        runtime.nodes[connection.nodeId.description] = RuntimeStatus.Node(address: connection.address, foreground: connection.foreground, connectedAt: connection.connectedAt)
        publishRuntime()
        logger.info("node connected", metadata: meta(connection))
        emit(.connected, node: connection.nodeId, ["address": .string(connection.address)])
    }
}
