import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeTransport
import NIOCore

/// Carrying out what the core decided: each action goes to the part it is for, and results that
/// come back (a store write's, a probe's) return as events.
extension BridgeDriver {
    func perform(_ actions: [BridgeAction]) {
        for action in actions {
            switch action {
            case let .send(id, message) where channels.isApp(id):
                channels.send(AppOutbound(message: message), to: id)  // its door counts what it relays
            case let .send(id, message):
                let bytes = SessionMessages.encode(message)
                let invoke = message as? Invoke
                if invoke != nil { metrics.relayed(bytes: bytes.count, toGateway: false) }
                channels.send(NodeOutbound(bytes: bytes, invokeID: invoke?.id), to: id)
            case let .withdraw(id, invokeID): channels.event(NodeOutbox.Withdraw(invokeID: invokeID), to: id)
            case let .authorize(id): channels.event(SecureChannelHandler.Authorize(), to: id)
            case let .close(id): channels.close(id)
            case let .toGateway(generation, frame): channels.toLink(generation) { $0.send(frame, flush: false) }
            case let .answer(.gateway(generation, requestID), answer):
                channels.toLink(generation) { $0.send(GatewayFrame.response(id: requestID, answer: answer), flush: false) }
            case let .answer(.control(token), answer): replies.answerControl(token, answer)
            case let .answer(.openClaw(node, invokeID), answer): outlets.openClaw?.answer(node, invokeID, answer)
            case let .nodePresence(presence): outlets.openClaw?.presence(presence)
            case let .openClawEvent(node, event, payload, tag): outlets.openClaw?.nodeEvent(event, payload: payload, tag: tag, on: node)
            case let .canvasRevoked(node): outlets.canvasRelay?.revoke(node)
            case let .canvasUsed(reply, use): replies.answerCanvas(reply, use)
            case let .refreshUpstreamCanvas(node): _ = outlets.openClaw?.refreshCanvas(for: node)
            case let .liveChanged(topic): outlets.liveChanged(topic == .asks ? .asks : .activity)
            case let .log(lines):
                for line in lines { logger.log(level: line.level, line.message, metadata: line.metadata) }
            case let .count(records):
                for record in records {
                    switch record {
                    case let .held(count): metrics.held(count)
                    case let .relayed(bytes, toGateway): metrics.relayed(bytes: bytes, toGateway: toGateway)
                    case let .resultDropped(reason): metrics.resultDropped(reason)
                    case let .invoke(command, outcome, seconds): metrics.invoke(command: command, outcome: outcome, seconds: seconds)
                    }
                }
            case let .updateStore(operation):
                let store = io.store
                io.run(on: loop) { try operation.carryOut(on: store) }.whenComplete { [self] result in
                    submit(.storeUpdated(operation: operation.id, result.mapError { $0 }), order: .now)
                    // The bridge's own change reaches the core now, not when inotify reports it.
                    if io.store.pairedFileVersion() != self.store.version || operation.changesPending { readStoreSoon() }
                }
            case let .audit(entries):
                metrics.auditAppended(entries.count)
                io.record(entries, on: loop)
            case let .probeState(read):
                let directory = io.store.directory
                io.run(on: loop) { directory.writeProblem(files: StateIO.storeFiles) }.whenComplete { [self] result in
                    let problem: String? =
                        switch result {
                        case let .success(problem): problem
                        case let .failure(error): "\(error)"
                        }
                    submit(.stateProbed(problem: problem), order: .now)
                    if read { readStoreSoon() }
                }
            case .publishRuntime: runtime.publishSoon(connections: load.connections) { [self] in runtimeFile() }
            case let .replaceInvites(state): invites.replace(with: state)
            // Released as paired (or gone, when the close comes first), or waiting for the
            // operator (its own cap is maxWaiting): no longer evictable either way.
            case let .releaseSlot(slot): channels.slotReleased(slot, waiting: false)
            case let .slotWaiting(slot): channels.slotReleased(slot, waiting: true)
            case let .wake(call): wakeHook.run(call)
            case let .notifyOperator(settings, prompt): outlets.askNotifier?.notify(prompt, settings)
            case let .armTimer(deadline):
                timer?.cancel()
                timer = loop.scheduleTask(deadline: NIODeadline.uptimeNanoseconds(UInt64(max(0, deadline.nanoseconds)))) { [self] in
                    submit(.timerFired)
                }
            }
        }
    }

    /// What the stall log calls an event (made only for a slow one).
    static func label(_ event: BridgeEvent) -> String {
        switch event {
        case let .received(bytes, id): "a \(bytes.count)-byte message from connection \(id)"
        case let .receivedRead(_, size, id): "a \(size)-byte message from connection \(id)"
        case let .request(method, _, _): "a \(SafeText.escape(String(method.prefix(64)))) request"
        case let .openClawInvoke(node, _): "an OpenClaw invoke for \(node)"
        case .opened: "a connection's opening"
        case .closed: "a connection's close"
        case .storeChanged: "the store's new state"
        case .storeUpdated: "a store update's outcome"
        case .timerFired: "the invoke deadline timer"
        case .tick: "the once-a-second tick"
        case .pingAll: "the pings to every connection"
        default: String(describing: event).prefix(60).description
        }
    }
}

extension StoreOperation {
    /// Changes to pending.json only (its version is not watched by the stat): read after them.
    var changesPending: Bool {
        switch change {
        case .redeemInvite, .recordSeen: false
        default: true
        }
    }
}
