import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Logging

/// A node's connection: opened, closed, and each message it sends.
extension BridgeCore {
    /// A connection finished its handshake. The driver has made sure `lastState` is the store as
    /// it is now (one `stat`).
    mutating func opened(_ opening: Opening, wall: Date) {
        // The handshake checked the key's length; a malformed one is refused, never trapped on.
        guard let key = PublicKey(bytes: opening.handshake.remoteStaticKey), storeReadable else {
            if let slot = opening.slot { actions.append(.releaseSlot(slot)) }
            actions.append(.close(opening.id))
            return
        }
        let phase: Phase =
            if case let .invite(id) = opening.handshake.handshake {
                .invited(inviteID: id)
            } else if let node = pairedNode(withKey: key), node.openClawApp?.deviceId == opening.app?.claim.deviceId { .paired } else { .unpaired }
        var connection = Connection(
            id: opening.id, key: key, nodeId: key.fingerprint, address: opening.address, peer: opening.peer, local: opening.local,
            handshakeHash: opening.handshake.handshakeHash, phase: phase, connectedAt: wall, slot: opening.slot)
        connection.app = opening.app?.claim
        connection.browser = opening.browser
        connections[opening.id] = connection
        if lastState.isBlocked(key) {
            logger.notice("refused blocked node", metadata: meta(connection))
            fail(opening.id, ErrorMessage(code: ErrorMessage.pairingRejected, message: "this device is blocked"))
        } else if connection.isPaired {
            becomePaired(opening.id)
        } else if let app = opening.app {
            if let token = app.bootstrapToken {
                appBootstrapRedeemed(token, claim: app.claim, details: app.details.sanitized(), on: connection, wall: wall)
            } else {
                appPairingRequested(app.claim, details: app.details.sanitized(), on: connection, wall: wall)
            }
        } else {
            logger.info("unpaired node connected", metadata: meta(connection))
            send(Welcome(bridgeName: name, paired: false, nodeId: connection.nodeId), to: opening.id)
        }
    }

    /// The connection's channel closed (or the core closed it).
    mutating func closed(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if sessions[connection.nodeId] == id { sessions[connection.nodeId] = nil }
        if let slot = connection.slot { actions.append(.releaseSlot(slot)) }
        // What went out on this connection cannot be answered on another (nor on a newer session).
        if connection.isPaired {
            book.connectionClosed(id, now: now)
        }
        if connection.isPaired, sessions[connection.nodeId] == nil { canvasSessionEnded(connection.nodeId) }
        // A replaced session closing is not the node going away.
        guard connection.isPaired, !connection.replaced, sessions[connection.nodeId] == nil,
            live.removeValue(forKey: connection.nodeId) != nil
        else { return }
        runtimeChanged = true
        logger.info("node disconnected", metadata: meta(connection))
        seen.insert(connection.nodeId)
        emit(.disconnected, node: connection.nodeId)
    }

    /// A message already read by `SessionMessages.read` (a large one is, off the relay loop).
    mutating func received(_ read: SessionMessages.Checked, size: Int, from id: ConnectionID, wall: Date) {
        guard let connection = connections[id] else { return }
        let message: any SessionMessage
        do throws(SessionMessageError) {
            switch try read.get() {
            case let .result(result) where connection.isPaired:
                resultReceived(result, size: size, from: connection)
                return
            case .result:
                logger.notice("unpaired node sent \(InvokeResult.type)", metadata: meta(connection))
                send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: id)
                return
            case let .message(decoded):
                message = decoded
            }
        } catch {
            logger.notice("bad message: \(error)", metadata: meta(connection))
            // A malformed answer fails its invoke now rather than leaving it to time out.
            if connection.isPaired, case let .malformed(invalid, type, invokeID) = error, type == nil || type == InvokeResult.type {
                book.malformed(invokeID: invokeID, from: connection.nodeId, connection: id, reason: invalid.description, now: now)
            }
            let reply = ErrorMessage(code: ErrorMessage.badMessage, message: "\(error)")
            if connection.isPaired { send(reply, to: id) } else { fail(id, reply) }
            return
        }
        switch message {
        case let ping as Ping:
            send(Pong(id: ping.id), to: id)
        case is Pong:
            break
        case let state as AppState where connection.isPaired:
            // The fast-fail always sees the latest state; what is announced (log, runtime.json,
            // gateway event) is rate-limited per node, and the rest coalesced into the next tick.
            connections[id]?.foreground = state.foreground
            if case .granted = buckets.take(.state, node: connection.nodeId, limits: settings.limits, now: now) {
                announceState(of: id)
            } else {
                connections[id]?.coalescedStates += 1
            }
        case let event as NodeEvent where connection.isPaired:
            nodeEvent(event, size: size, from: connection, now: now, wall: wall)
        case let call as GatewayCall where connection.isPaired:
            nodeCalled(call, on: connection, now: now)
        case let register as PushRegister where connection.isPaired:
            pushRegistered(register, on: connection, wall: wall)
        case let refresh as CanvasRefresh where connection.isPaired:
            send(canvasRefreshed(refresh, for: connection, wall: wall), to: id)
        case let request as PairRequest:
            pairingRequested(request, on: connection, now: now, wall: wall)
        case let reveal as PairReveal:
            nonceRevealed(reveal, on: connection, wall: wall)
        case let redeem as InviteRedeem:
            inviteRedeemed(redeem, on: connection, wall: wall)
        default:
            if connection.isPaired {
                send(ErrorMessage(code: ErrorMessage.badMessage, message: "unexpected \(type(of: message).type) message"), to: id)
            } else {
                // An unpaired key can do nothing but ask to pair: no detail, no metadata, no access.
                logger.notice("unpaired node sent \(type(of: message).type)", metadata: meta(connection))
                send(ErrorMessage(code: ErrorMessage.notPaired, message: "pair first"), to: id)
            }
        }
        // A node that came back, moved to the front, or finished an invoke: what waits for it may run.
        if !book.held.isEmpty, connection.isPaired, connections[id] != nil, book.held.count(forNode: connection.nodeId) > 0 {
            deliverHeld(connection.nodeId, wall: wall)
        }
    }

    mutating func announceState(of id: ConnectionID) {
        guard let connection = connections[id] else { return }
        connections[id]?.announcedForeground = connection.foreground
        live[connection.nodeId]?.foreground = connection.foreground
        runtimeChanged = true
        logger.info("node moved to the \(connection.foreground ? "foreground" : "background")", metadata: meta(connection))
        emit(connection.foreground ? .foreground : .background, node: connection.nodeId)
    }

    /// A node's own event, relayed within its limits: size, count and bytes a minute.
    mutating func nodeEvent(_ event: NodeEvent, size: Int, from connection: Connection, now: Moment, wall: Date) {
        let limits = settings.limits
        // With OpenClaw, the names the bridge makes from a node's calls are not a plain event's
        // to use: they start agent runs, which the `agent` limit counts.
        let refusal: String? =
            if gateway.openClaw, OpenClawNodeEvents.reserved.contains(event.event) { "\(event.event) comes only from its calls" } else if size > limits[.maxEventBytes] {
                "larger than \(limits[.maxEventBytes]) bytes"
            } else if case .limited = buckets.take(.event, node: connection.nodeId, limits: limits, now: now) {
                "over \(limits[.eventsPerMinute]) events a minute"
            } else if case .limited = buckets.take(.eventBytes, node: connection.nodeId, count: size, limits: limits, now: now) {
                "over \(limits[.eventBytesPerMinute]) event bytes a minute"
            } else { nil }
        if let refusal {
            if connection.droppedEvents == 0 { logger.notice("dropped an event from this node: \(refusal)", metadata: meta(connection)) }
            connections[connection.id]?.droppedEvents += 1
            return
        }
        if gateway.openClaw {
            // On the node's own socket, if the catalogue lets this node say it.
            guard let payload = openClawEventPayload(event, from: connection, now: now, wall: wall) else { return }
            return actions.append(.openClawEvent(node: connection.nodeId, event: event.event, payload: payload, tag: nil))
        }
        emit(.nodeEvent, node: connection.nodeId, ["event": .string(event.event), "payload": event.payload ?? .null])
    }
}
