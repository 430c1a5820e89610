import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Everything that happens to the bridge, as the core hears it: one entry point,
/// `BridgeCore.handle(_:now:wall:)`, with the time passed in (issue 39 §2). The driver turns
/// sockets, files and timers into these and carries out the actions that come back.
package enum BridgeEvent {
    // Nodes
    case opened(BridgeCore.Opening)
    case received([UInt8], from: ConnectionID)
    /// A message already read off the relay loop (a large one).
    case receivedRead(SessionMessages.Checked, size: Int, from: ConnectionID)
    case closed(ConnectionID)
    // The gateway link, and the operator's control socket
    case request(method: String, params: JSONValue?, from: AnswerTarget)
    case gatewayUp(generation: Int)
    case gatewayDown(generation: Int)
    case gatewayDrained(generation: Int, droppedEvents: Int)
    case gatewayAnswered(id: String, Result<JSONValue?, ErrorMessage>, generation: Int)
    case controlLeft(Set<Int>)
    // An OpenClaw gateway's per-node sockets
    case openClawInvoke(node: Fingerprint, OpenClawNodeSession.Invoke)
    case openClawCancel(node: Fingerprint, invokeID: String)
    case openClawSession(node: Fingerprint, deviceId: String?, state: String, approval: RuntimeStatus.GatewayApproval?)
    case openClawEventAnswered(tag: String, Result<JSONValue?, ErrorMessage>)
    /// At start: the nodes' identities at the gateway (device IDs), and those of nodes revoked
    /// while the daemon was down, which were just removed.
    case openClawDevices(kept: [Fingerprint: String], removed: [Fingerprint: String])
    // The store
    case storeChanged(PairingState, version: String)
    case storeUnreadable(any Error)
    case storeUpdated(operation: Int, Result<StoreOperation.Outcome, any Error>)
    /// A node's channel holds more (true) than `nodeQueueBytes` unwritten, or drained (false).
    case nodeBacklog(ConnectionID, Bool)
    /// What `.probeState` found: nil when the state directory takes writes, else why not.
    case stateProbed(problem: String?)
    // Time
    case timerFired
    case tick
    case pingAll
    // What the daemon set up, and changes of it
    case reload(BridgeSettings)
    case listening([String], reachable: [String])
    case advertising(String, name: String?)
    case gatewayStatus(String)
    case controlSocket(String)
    case console(String)
    case canvas(CanvasRelayInfo, status: RuntimeStatus.Canvas)
    case canvasCertificateRotated(sha256: String)
    /// The canvas relay asks whose `capability` this is; the answer is `.canvasUsed(reply:)`.
    case canvasUse(String, reply: Int)
    /// A node's socket at an OpenClaw gateway was given (nil: lost) the gateway's canvas capability.
    case canvasUpstream(node: Fingerprint, capability: String?)
    case openClawApps([String], tlsSha256: String?)
    /// The browser door listens at these URLs.
    case browserDoor([String])
    case shutdown
}

extension BridgeCore {
    /// The core's one entry point: an event and the time, the actions to carry out. Adding an
    /// event takes four edits: its case above, its line here, its handler in the `BridgeCore+…`
    /// file of its domain, and the driver's `submit` of it (docs/architecture.md, "Where a change goes").
    package mutating func handle(_ event: BridgeEvent, now: Moment, wall: Date) -> [BridgeAction] {
        // Every event brings its time: nothing in the core decides with the previous event's clock.
        self.now = now
        self.wall = wall
        noticeClockStep(wall: wall)
        switch event {
        case let .opened(opening): opened(opening, wall: wall)
        case let .received(bytes, id): received(SessionMessages.check(bytes), size: bytes.count, from: id, wall: wall)
        case let .receivedRead(read, size, id): received(read, size: size, from: id, wall: wall)
        case let .closed(id): closed(id)
        case let .request(method, params, target): request(method: method, params: params, from: target, wall: wall)
        case let .gatewayUp(generation): gatewayUp(generation)
        case let .gatewayDown(generation): gatewayDown(generation)
        case let .gatewayDrained(generation, dropped): gatewayDrained(generation, droppedEvents: dropped)
        case let .gatewayAnswered(id, result, generation): gatewayAnswered(id, result, generation: generation)
        case let .controlLeft(tokens): controlLeft(tokens)
        case let .openClawInvoke(node, invoke): openClawInvoke(node: node, invoke, wall: wall)
        case let .openClawCancel(node, invokeID): openClawCancel(node: node, invokeID: invokeID)
        case let .openClawSession(node, deviceId, state, approval): openClawSession(node: node, deviceId: deviceId, state: state, approval: approval)
        case let .openClawEventAnswered(tag, result): openClawEventAnswered(tag, result)
        case let .openClawDevices(kept, removed): openClawDevices(kept: kept, removed: removed)
        case let .storeChanged(state, version): storeChanged(state, version: version)
        case let .storeUnreadable(error): storeUnreadable(error)
        case let .storeUpdated(operation, result): storeUpdated(operation, result)
        case let .stateProbed(problem): stateProbed(problem)
        case let .nodeBacklog(id, backlogged): nodeBacklog(id, backlogged)
        case .timerFired: timerFired()
        case .tick: tick(wall: wall)
        case .pingAll: pingAll()
        case let .reload(settings): reload(settings)
        case let .listening(addresses, reachable): setListening(addresses, reachable: reachable)
        case let .advertising(status, name): setAdvertising(status, name: name)
        case let .gatewayStatus(status): setGatewayStatus(status)
        case let .controlSocket(path): setControlSocket(path)
        case let .console(url): setConsole(url)
        case let .canvas(info, status): setCanvas(info, status: status)
        case let .canvasCertificateRotated(sha256): canvasCertificateRotated(sha256, wall: wall)
        case let .canvasUse(capability, reply): actions.append(.canvasUsed(reply: reply, canvasUse(capability)))
        case let .canvasUpstream(node, capability): canvasGrants.setUpstream(capability.map { CanvasGrants.Upstream(capability: $0) }, node: node)
        case let .openClawApps(urls, sha256): setOpenClawApps(urls, tlsSha256: sha256)
        case let .browserDoor(urls):
            runtime.browser = urls
            runtimeChanged = true
        case .shutdown: shutdown(wall: wall)
        }
        return drain()
    }
}
