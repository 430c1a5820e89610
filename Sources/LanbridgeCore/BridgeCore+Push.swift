import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Where to wake a node (PROTOCOL.md §9.6).
extension BridgeCore {
    /// A paired node's `push.register`: checked whole, counted as one of its events, stored (the
    /// token never logged), then answered; with OpenClaw, an APNs token also goes to the gateway.
    mutating func pushRegistered(_ message: PushRegister, on connection: Connection, wall: Date) {
        let registration: PushRegistration
        do throws(ErrorMessage) { registration = try message.validated() } catch {
            return send(PushResult(id: message.id, error: error), to: connection.id)
        }
        if case .limited = buckets.take(.event, node: connection.nodeId, limits: settings.limits, now: now) {
            return send(
                PushResult(
                    id: message.id,
                    error: ErrorMessage(
                        code: ErrorMessage.rateLimited, message: "over \(settings.limits[.eventsPerMinute]) events a minute",
                        retryable: true)), to: connection.id)
        }
        updateStore(.registerPush(node: connection.nodeId, registration, messageId: message.id, now: wall), for: connection.id)
    }

    /// The store has it (or could not take it).
    mutating func pushStored(_ registration: PushRegistration, messageId: String, on connection: Connection, _ result: Result<StoreOperation.Outcome, any Error>) {
        switch result {
        case .success:
            logger.info("push registration stored", metadata: meta(connection, ["provider": "\(registration.provider)"]))
            send(PushResult(id: messageId), to: connection.id)
            if gateway.openClaw, let (event, payload) = OpenClawNodeEvents.pushRegistration(registration) {
                actions.append(.openClawEvent(node: connection.nodeId, event: event, payload: payload, tag: nil))
            }
        case let .failure(error):
            logger.error("cannot store a push registration: \(error)", metadata: meta(connection))
            send(
                PushResult(id: messageId, error: ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge cannot store it right now", retryable: true)),
                to: connection.id)
        }
    }
}
