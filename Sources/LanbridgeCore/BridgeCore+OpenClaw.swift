import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// A paired node's comings and goings, for the OpenClaw gateway protocol: each connected node has
/// its own socket at the gateway (`OpenClawLinks`), opened when it comes and closed when it goes.
package struct NodePresence: Sendable, Equatable {
    package enum Change: Sendable, Equatable {
        /// Connected: what it may be asked (OpenClaw's names of the commands its rules allow).
        case online(details: NodeDetails, commands: [String], foreground: Bool)
        /// Its rules (or the config's defaults) changed what it may be asked.
        case commands([String])
        case foreground(Bool)
        case offline
        /// Its pairing is gone: so is its gateway identity.
        case revoked
    }

    package var node: Fingerprint
    package var change: Change
}

/// Invokes from an OpenClaw gateway: the same gate, rules and fast-fail as §12's `node.invoke`.
extension BridgeCore {
    /// The gateway invoked a command on one node's socket.
    mutating func openClawInvoke(node: Fingerprint, _ invoke: OpenClawNodeSession.Invoke, wall: Date) {
        let request = InvokeRequest(
            node: node.description, command: invoke.command, params: invoke.params,
            timeoutMs: invoke.timeoutMs, idempotencyKey: invoke.idempotencyKey)
        self.invoke(request, origin: .gateway, for: .openClaw(node: node, invokeID: invoke.id), now: now, wall: wall)
    }

    /// The gateway cancelled an invoke on the node's socket (`node.invoke.cancel`): as §12's cancel.
    mutating func openClawCancel(node: Fingerprint, invokeID: String) {
        let target = AnswerTarget.openClaw(node: node, invokeID: invokeID)
        if !cancel(node: node, where: { $0.target == target }) {
            logger.info("the gateway cancelled an invoke no longer in flight", metadata: ["node": "\(node)", "invoke": "\(invokeID)"])
        }
    }

    /// A node's gateway session changed: shown by `status` and `doctor`, `nodes describe`.
    mutating func openClawSession(node: Fingerprint, deviceId: String?, state: String, approval: RuntimeStatus.GatewayApproval?) {
        if let deviceId, paired[node] != nil, runtime.openClawDevices?[node.description] != deviceId {
            runtime.openClawDevices = (runtime.openClawDevices ?? [:]).merging([node.description: deviceId]) { $1 }
            runtimeChanged = true
        }
        if live[node] != nil {
            live[node]?.gatewayDeviceId = deviceId
            live[node]?.gatewaySession = state
            live[node]?.gatewayApproval = approval
            runtimeChanged = true
        }
    }

    /// The identities the daemon holds at the gateway, at start. Those of nodes revoked while it was
    /// down are gone here, and stay at the gateway: audited with what removes them there.
    mutating func openClawDevices(kept: [Fingerprint: String], removed: [Fingerprint: String]) {
        runtime.openClawDevices = Dictionary(uniqueKeysWithValues: kept.map { ($0.key.description, $0.value) })
        runtimeChanged = true
        for (node, deviceId) in removed.sorted(by: { $0.key.description < $1.key.description }) { gatewayKeeps(node, deviceId: deviceId) }
    }

    /// A revoked node's identity is gone from lanbridge, but the gateway keeps the device, its
    /// token and its `node.list` entry, and a node's socket may not remove them (issue 60 §4).
    mutating func gatewayKeeps(_ node: Fingerprint, deviceId: String) {
        let cleanup = OpenClawCommands.cleanup(deviceId: deviceId)
        logger.warning(
            "the node's pairing is gone; the OpenClaw gateway keeps its device, token and node.list entry until its operator removes them: \(cleanup)",
            metadata: ["node": "\(node)", "deviceId": "\(deviceId)"])
        actions.append(
            .audit([
                AuditEntry(time: wall, event: "openclaw.device.kept", actor: "bridge", nodeId: node.description, detail: "device \(deviceId): \(cleanup)")
            ]))
    }

    /// OpenClaw's names of the commands a paired node's rules let the gateway ask of it.
    func openClawOffer(_ paired: PairedNode) -> [String] {
        let rules = self.rules[paired.nodeId] ?? CompiledRules(paired.access)
        return paired.details.commands.filter { command in
            switch settings.policy.decide(command, rules: rules, declared: paired.details.commands, flags: paired.details.flags, foreground: true) {
            case .allow, .ask, .backgroundUnavailable: true  // an asked command may run, once the operator says yes
            case .deny: false
            }
        }.compactMap(OpenClawCommands.openClawName)
    }

    /// After a change of rules or defaults: each connected node whose offer changed re-offers it,
    /// at once, on its gateway socket (the node itself stays connected).
    mutating func reofferChangedCommands() {
        guard gateway.openClaw else { return }
        for (node, id) in sessions.sorted(by: { $0.value < $1.value }) {
            guard let connection = connections[id], connection.isPaired, let offered = connection.openClawOffer,
                let paired = paired[node]
            else { continue }
            let commands = openClawOffer(paired)
            guard commands != offered else { continue }
            connections[id]?.openClawOffer = commands
            actions.append(.nodePresence(NodePresence(node: node, change: .commands(commands))))
        }
    }

    /// What of a node's own event may reach the OpenClaw gateway (`OpenClawNodeEvents.catalogue`),
    /// or nil: refused names are audited (once a minute per node and name, with a count), refused
    /// rates are counted with the node's dropped events.
    mutating func openClawEventPayload(_ event: NodeEvent, from connection: Connection, now: Moment, wall: Date) -> JSONValue? {
        let payload = event.payload ?? .null
        func refuse(_ reason: String) -> JSONValue? {
            logger.notice("refused an event for the gateway: \(reason)", metadata: meta(connection, ["event": "\(event.event)"]))
            recordDenial("event.denied", by: "node", node: connection.nodeId, what: event.event, reason: reason, wall: wall)
            return nil
        }
        guard let entry = OpenClawNodeEvents.catalogue[event.event] else { return refuse("NOT_IN_CATALOGUE") }
        switch entry.gate {
        case .open:
            break
        case let .command(command):
            guard let paired = paired[connection.nodeId] else { return nil }
            let rules = self.rules[connection.nodeId] ?? CompiledRules(paired.access)
            if case .deny = settings.policy.decide(command, rules: rules, declared: paired.details.commands, flags: paired.details.flags, foreground: true) {
                return refuse("NEEDS_\(command.uppercased().replacing(scalar: ".", with: "_"))")
            }
        case let .grant(name):
            guard let paired = paired[connection.nodeId], (self.rules[connection.nodeId] ?? CompiledRules(paired.access)).allows(name) else {
                return refuse("NOT_GRANTED")
            }
        }
        if entry.wakesAgent, case .limited = buckets.take(.agent, node: connection.nodeId, limits: settings.limits, now: now) {
            if connection.droppedEvents == 0 {
                logger.notice("dropped an event that wakes the agent: over \(settings.limits[.agentPerMinute]) a minute", metadata: meta(connection))
            }
            connections[connection.id]?.droppedEvents += 1
            return nil
        }
        return entry.ownSessionOnly ? OpenClawNodeEvents.withoutSessionKey(payload) : payload
    }

    /// The §12 node events, as presence changes for the OpenClaw links.
    mutating func announcePresence(_ kind: NodeEventKind, node: Fingerprint) {
        let change: NodePresence.Change
        switch kind {
        case .connected:
            guard let paired = paired[node], let connection = pairedConnection(node) else { return }
            let commands = openClawOffer(paired)
            connections[connection.id]?.openClawOffer = commands
            change = .online(details: paired.details, commands: commands, foreground: connection.foreground)
        case .disconnected: change = .offline
        case .foreground: change = .foreground(true)
        case .background: change = .foreground(false)
        case .revoked:
            if let deviceId = runtime.openClawDevices?.removeValue(forKey: node.description) {
                runtimeChanged = true
                gatewayKeeps(node, deviceId: deviceId)
            }
            change = .revoked
        case .pairRequested, .pairResolved, .nodeEvent: return
        }
        actions.append(.nodePresence(NodePresence(node: node, change: change)))
    }
}
