import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

// Pairing, by code (PROTOCOL.md §9.2) and by invite (§9.3), for connections that are not paired
// yet. Each store change goes out as an action; its outcome comes back through `storeUpdated`,
// and the connection, if it is still there, moves on.
extension BridgeCore {
    // MARK: - Pairing by code

    mutating func pairingRequested(_ request: PairRequest, on connection: Connection, now: Moment, wall: Date) {
        guard case .unpaired = connection.phase, let commitment = try? Hex.decode(request.commitment), commitment.count == 32 else {
            return fail(connection.id, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected pairing request"))
        }
        if let refusal = challengeLimits.admit(key: connection.key, address: connection.address, now: now) {
            logger.notice("pairing challenge refused: \(refusal)", metadata: meta(connection))
            return fail(connection.id, ErrorMessage(code: ErrorMessage.pairingFailed, message: refusal, retryable: false))
        }
        let details = request.details.sanitized()
        connections[connection.id]?.claimedName = details.displayName
        connections[connection.id]?.phase = .requesting(commitment: commitment)
        updateStore(
            .challenge(key: connection.key, details: details, source: connection.address, browser: connection.browser, now: wall, timing: pairingTiming),
            for: connection.id)
    }

    mutating func nonceRevealed(_ reveal: PairReveal, on connection: Connection, wall: Date) {
        guard case let .challenged(requestId, commitment, bridgeNonce) = connection.phase else {
            return fail(connection.id, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected reveal"))
        }
        let h = connection.handshakeHash
        guard let nodeNonce = try? Hex.decode(reveal.nonce), nodeNonce.count == VerificationCode.nonceLength,
            VerificationCode.verify(commitment: commitment, handshakeHash: h, nodeNonce: nodeNonce)
        else {
            logger.warning(
                "pairing commitment did not match: possible man in the middle; request locked",
                metadata: meta(connection, ["request": "\(requestId)"]))
            updateStore(.commitmentFailed(requestId: requestId), for: nil)
            return fail(connection.id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the revealed nonce does not match its commitment"))
        }
        let code = VerificationCode.code(handshakeHash: h, nodeNonce: nodeNonce, bridgeNonce: bridgeNonce)
        connections[connection.id]?.phase = .revealing(requestId: requestId)
        updateStore(.setCode(code, requestId: requestId, now: wall, timing: pairingTiming), for: connection.id)
    }

    // MARK: - OpenClaw's apps (issue 38)

    /// An app with a device lanbridge does not know: a pending request in lanbridge's own store,
    /// then `NOT_PAIRED` with the request's ID and the command that approves it, which the app
    /// shows. It retries on its own; the approval takes at its next connect.
    mutating func appPairingRequested(_ claim: OpenClawAppClaim, details: NodeDetails, on connection: Connection, wall: Date) {
        connections[connection.id]?.claimedName = details.displayName
        connections[connection.id]?.phase = .appRequesting
        updateStore(.appRequest(key: connection.key, claim, details: details, source: connection.address, now: wall, timing: pairingTiming), for: connection.id)
    }

    /// An app with a setup code's bootstrap token: redeemed, it is paired with no request; a token
    /// that is not live falls back to an ordinary request the operator approves.
    mutating func appBootstrapRedeemed(_ token: String, claim: OpenClawAppClaim, details: NodeDetails, on connection: Connection, wall: Date) {
        connections[connection.id]?.claimedName = details.displayName
        connections[connection.id]?.phase = .redeeming
        updateStore(
            .appBootstrap(
                token: token, key: connection.key, claim, details: details, defaultAccess: settings.defaultRules(forPlatform: details.platform, declared: details.commands),
                now: wall), for: connection.id)
    }

    /// What the app shows while it waits (OpenClaw's `details.userMessage`/`actionCommand`).
    package static func appPairingRequired(_ requestId: String) -> ErrorMessage {
        ErrorMessage(
            code: ErrorMessage.notPaired, message: "pairing required",
            details: [
                "code": "PAIRING_REQUIRED", "requestId": .string(requestId), "reason": "not-paired",
                "title": "Approve this device on the bridge",
                "userMessage":
                    "lanbridge holds this device's request. On the bridge, check that the certificate fingerprint this device showed matches `lanbridge status`, then approve it.",
                "actionLabel": "Approve on the bridge",
                "actionCommand": .string("lanbridge nodes approve \(requestId)"),
            ])
    }

    // MARK: - Pairing by invite

    mutating func inviteRedeemed(_ redeem: InviteRedeem, on connection: Connection, wall: Date) {
        guard case let .invited(inviteID) = connection.phase, let secretBytes = try? Hex.decode(redeem.secret) else {
            return fail(connection.id, ErrorMessage(code: ErrorMessage.notPaired, message: "unexpected invite redemption"))
        }
        // A page the browser could not authenticate may have been served by whoever sits between:
        // it could have read the secret from the link, so its invite counts for nothing.
        if connection.browser == .unverified {
            return fail(connection.id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "invites are refused on an unverified page; pair by code"))
        }
        let details = redeem.details.sanitized()
        connections[connection.id]?.phase = .redeeming
        // A browser's claimed platform does not choose its defaults: every page gets the web's
        // (as `PendingRequest.platformForDefaults` says for one approved by code).
        let platform = connection.browser != nil ? "web" : details.platform
        updateStore(
            .redeemInvite(
                id: inviteID, secret: SecureBytes(copying: secretBytes), key: connection.key, details: details, browser: connection.browser,
                defaultAccess: settings.defaultRules(forPlatform: platform, declared: details.commands), now: wall), for: connection.id)
    }

    // MARK: - Outcomes

    /// A store change the core asked for is done (or failed).
    mutating func storeUpdated(_ operation: Int, _ result: Result<StoreOperation.Outcome, any Error>) {
        guard let (id, change) = storeOperations.removeValue(forKey: operation) else { return }
        if case let .failure(error as StoreOperation.Unwritable) = result { stateWriteFailed(error.reason, change: change) }
        if case let .failure(error) = result, id == nil { logger.error("pairing store: \(error)") }
        guard let id, let connection = connections[id] else { return }
        switch (change, connection.phase, result) {
        case let (.challenge, .requesting(commitment), .success(.challenged(pending))):
            if let lock = pending.locked {
                logger.warning("pairing request locked: \(lock.explanation)", metadata: meta(connection, ["request": "\(pending.requestId)"]))
                fail(id, ErrorMessage(code: ErrorMessage.pairingFailed, message: PairingError.requestLocked(pending.requestId, lock).description))
                break
            }
            let bridgeNonce = random(VerificationCode.nonceLength)
            connections[id]?.phase = .challenged(requestId: pending.requestId, commitment: commitment, bridgeNonce: bridgeNonce)
            logger.info(
                "pairing requested",
                metadata: meta(
                    connection,
                    [
                        "request": "\(pending.requestId)",
                        "challenge": "\(pending.challenges)/\(PairingState.Limits.challengesPerRequest)",
                    ]))
            send(PairChallenge(requestId: pending.requestId, nonce: Hex.encode(bridgeNonce), expiresAt: pending.expiresAt), to: id)
        case let (.challenge, _, .failure(error as PairingError)):
            fail(id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)", retryable: error.isRetryable))
        case let (.challenge, _, .failure(error)):
            logger.error("pairing store: \(error)")
            fail(id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "the bridge cannot record requests right now", retryable: true))
        case let (.setCode, .revealing(requestId), .success(.codeSet(expiresAt?))):
            connections[id]?.phase = .waiting(requestId: requestId)
            if let slot = connection.slot { actions.append(.slotWaiting(slot)) }
            send(PairPending(requestId: requestId, expiresAt: expiresAt), to: id)
        case let (.setCode, .revealing(requestId), _):
            // The request went meanwhile (rejected, expired): the store says how.
            connections[id]?.phase = .waiting(requestId: requestId)
            resolveWaiting(id)
        case let (.redeemInvite, .redeeming, .success(.redeemed(node))):
            logger.info("node paired by invite", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)"])
            // Known as paired from now, not from the store's next read: what is announced for the
            // node (its OpenClaw socket above all) needs its record (issue 23).
            index(node)
            becomePaired(id, announce: .approved)
        case let (.appRequest, .appRequesting, .success(.challenged(pending))):
            logger.info(
                "pairing requested by an OpenClaw app",
                metadata: meta(
                    connection,
                    [
                        "request": "\(pending.requestId)",
                        "device": "\(pending.openClawApp?.deviceId.prefix(16) ?? "")",
                    ]))
            fail(id, Self.appPairingRequired(pending.requestId))
        case let (.appBootstrap, .redeeming, .success(.redeemed(node))):
            logger.info("OpenClaw app paired by setup code", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)"])
            index(node)
            becomePaired(id)
        case let (.appBootstrap(_, _, claim, details, _, _), _, .failure(error)):
            logger.notice("an OpenClaw app's setup code was refused: \(error); filing an ordinary request", metadata: meta(connection))
            appPairingRequested(claim, details: details, on: connection, wall: connection.connectedAt)
        case let (.appRequest, .appRequesting, .success(.redeemed(node))):
            index(node)
            becomePaired(id)
        case let (.appRequest, _, .failure(error)):
            logger.notice("an OpenClaw app's pairing request was refused: \(error)", metadata: meta(connection))
            fail(id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)", retryable: true))
        case let (.registerPush(_, registration, messageId, _), .paired, result):
            pushStored(registration, messageId: messageId, on: connection, result)
        case let (.redeemInvite, _, .failure(error)):
            logger.notice("invite redemption refused: \(error)", metadata: meta(connection))
            fail(id, ErrorMessage(code: ErrorMessage.pairingFailed, message: "\(error)"))
        default:
            break
        }
    }

    /// A connection whose request waits (or is challenged): approved, rejected or expired in
    /// `lastState`, it hears so; otherwise it keeps waiting.
    mutating func resolveWaiting(_ id: ConnectionID) {
        guard let connection = connections[id], let requestId = connection.phase.requestId else { return }
        if pairedNode(withKey: connection.key) != nil {
            logger.info("pairing approved", metadata: meta(connection, ["request": "\(requestId)"]))
            becomePaired(id, announce: .approved)
        } else if lastState.request(requestId) == nil {
            let expired = lastState.pending.expired.contains { $0.requestId == requestId }
            logger.info("pairing \(expired ? "expired" : "rejected")", metadata: meta(connection, ["request": "\(requestId)"]))
            send(PairResolved(outcome: expired ? .expired : .rejected, nodeId: connection.nodeId), to: id)
            fail(
                id,
                expired
                    ? ErrorMessage(code: ErrorMessage.pairingExpired, message: "the pairing request expired; ask again", retryable: true)
                    : ErrorMessage(code: ErrorMessage.pairingRejected, message: "the operator rejected this device"))
        }
    }

    /// The connection proved a paired key. Its welcome (or its pairing's outcome) is the first
    /// message the bridge sends it as paired (§9.1), and only then can invokes and pings find it;
    /// here that holds by construction, as nothing else runs in between.
    mutating func becomePaired(_ id: ConnectionID, announce outcome: PairResolved.Outcome? = nil) {
        guard var connection = connections[id] else { return }
        let replaced = pairedConnection(connection.nodeId).flatMap { $0.id != id ? $0 : nil }
        connection.phase = .paired
        connection.announcedForeground = connection.foreground
        if let slot = connection.slot { actions.append(.releaseSlot(slot)) }
        connection.slot = nil
        connections[id] = connection
        // One live session per node: a reconnect replaces the old one at once. The node has not
        // gone away, so the gateway hears no `disconnected` for the old session.
        if let replaced {
            logger.info("node reconnected; replacing its old session", metadata: meta(connection))
            connections[replaced.id]?.replaced = true
            fail(replaced.id, ErrorMessage(code: ErrorMessage.replaced, message: "a newer session replaced this one"))
        }
        actions.append(.authorize(id))
        // Only to a node that proved a paired key: where else to dial, and the agent's canvas.
        let canvas = canvasGranted(to: connection)
        if let outcome {
            var resolved = PairResolved(outcome: outcome, nodeId: connection.nodeId)
            if outcome == .approved { (resolved.addresses, resolved.canvas) = (runtime.reachable, canvas) }
            send(resolved, to: id)
        } else {
            var welcome = Welcome(bridgeName: name, paired: true, nodeId: connection.nodeId)
            (welcome.addresses, welcome.canvas) = (runtime.reachable, canvas)
            send(welcome, to: id)
        }
        sessions[connection.nodeId] = id
        seen.insert(connection.nodeId)
        let previous = live[connection.nodeId]
        live[connection.nodeId] = RuntimeStatus.Node(
            address: connection.address, foreground: connection.foreground,
            connectedAt: connection.connectedAt)
        // A session that replaces another keeps the node's gateway socket, and so its state.
        live[connection.nodeId]?.gatewayDeviceId = previous?.gatewayDeviceId
        live[connection.nodeId]?.gatewaySession = previous?.gatewaySession
        live[connection.nodeId]?.gatewayApproval = previous?.gatewayApproval
        runtimeChanged = true
        logger.info("node connected", metadata: meta(connection))
        emit(.connected, node: connection.nodeId, ["address": .string(connection.address)])
    }
}

extension PairingError {
    package var isRetryable: Bool {
        if case .tooManyFromAddress = self { true } else { false }
    }
}
