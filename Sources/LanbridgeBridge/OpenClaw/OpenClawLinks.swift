import FoundationEssentials
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging
import NIOCore

/// With `gateway.protocol: "openclaw"`: every connected, paired node has its own WebSocket at the
/// OpenClaw gateway, as role `node` with its own Ed25519 identity (the protocol binds one node to
/// one socket). The socket opens when the node connects to the bridge and closes when it leaves,
/// so the gateway sees the node come and go; it redials with backoff while the node stays.
///
/// The gateway is dialled as §12's (`GatewayDialer`: `wss://`, loopback `ws://` or `unix:`, a local
/// listener's owner checked before the upgrade request), and at most `limits.openClawConnecting`
/// handshakes are under way at once (the gateway allows 32 unauthenticated sockets per address,
/// and every node's socket comes from the bridge's). When to redial is `OpenClawRedial`'s to say.
///
/// Everything but the redial tasks runs on the driver's event loop.
final class OpenClawLinks: @unchecked Sendable {
    struct Options: Sendable {
        var dialer: GatewayDialer
        var token: SecureBytes?
        var version: String
        var maxMessageSize: Int
        var timing: OpenClawRedial.Timing
    }

    private var timing: OpenClawRedial.Timing { options.timing }

    let loop: any EventLoop
    private weak var driver: BridgeDriver?
    private let options: Options
    private let devices: OpenClawDevices
    /// The devices file is read, changed and written whole, on the state directory's I/O thread
    /// (`StateIO`, as every state file): one thread, so one change at a time, and never on the
    /// cooperative pool.
    private let io: StateIO
    private let connecting: ConnectSlots
    private let logger: Logger
    private var nodes: [Fingerprint: NodeLink] = [:]
    private var nextToken = 0

    init(_ options: Options, devices: OpenClawDevices, driver: BridgeDriver, logger: Logger) {
        (self.options, self.devices, self.driver, loop, io, self.logger) = (options, devices, driver, driver.loop, driver.io, logger)
        connecting = ConnectSlots(options.timing.connecting)
    }

    /// At start: identities of nodes revoked while the daemon was down go; the core learns every
    /// node's device ID at the gateway (and audits what the gateway keeps of the removed ones).
    func forgetAllBut(_ paired: Set<Fingerprint>) async {
        do {
            let devices = devices
            let (kept, removed) = try await io.run(on: loop) { try devices.keepOnly(paired) }.get()
            if !removed.isEmpty { logger.info("removed \(removed.count) OpenClaw identities of nodes no longer paired") }
            driver?.submit(.openClawDevices(kept: kept, removed: removed))
        } catch {
            logger.error("cannot read \(OpenClawDevices.fileName): \(error)")
        }
    }

    // MARK: - From the driver (on the loop)

    func presence(_ presence: NodePresence) {
        loop.preconditionInEventLoop()
        let node = presence.node
        switch presence.change {
        case let .online(details, commands, foreground):
            // A session replacing another keeps the node's socket.
            guard nodes[node] == nil else { return offer(commands, on: node) }
            nextToken += 1
            let link = NodeLink(
                token: nextToken, foreground: foreground, commands: commands, waiting: WaitingEvents(limit: timing.waitingEvents, wait: timing.eventWait))
            nodes[node] = link
            let token = link.token
            link.task = Task { await self.run(node, token: token, details: details) }
        case let .commands(commands):
            offer(commands, on: node)
        case let .foreground(foreground):
            nodes[node]?.foreground = foreground
            nodes[node]?.handler?.nodeForeground(foreground)
        case .offline:
            if let link = nodes.removeValue(forKey: node) { stop(link) }
        case .revoked:
            if let link = nodes.removeValue(forKey: node) { stop(link) }
            changeDevices("remove the OpenClaw identity of \(node)") { devices in
                try devices.forget(node)
                return ("OpenClaw identity removed", ["node": "\(node)"])
            }
        }
    }

    /// The bridge is stopping: every node's socket closes.
    func stopAll() {
        for link in nodes.values { stop(link) }
        nodes.removeAll()
    }

    /// The node's rules changed what the gateway may ask. The gateway takes a node's commands only
    /// at its connect, so a command added needs a new socket: it reconnects once nothing is in
    /// flight (a socket still dialling offers the new set anyway). A command taken away does not:
    /// lanbridge's rules refuse it whatever the gateway asks, and every reconnect is a moment in
    /// which the gateway answers its own callers NOT_CONNECTED (issue 60 §5); the next connect
    /// offers the smaller set.
    private func offer(_ commands: [String], on node: Fingerprint) {
        guard let link = nodes[node], link.commands != commands else { return }
        link.commands = commands
        guard !link.unoffered.isEmpty else { return }
        logger.info("re-offering the node's commands to the OpenClaw gateway", metadata: ["node": "\(node)", "commands": "\(commands.joined(separator: ","))"])
        link.handler?.reoffer()
    }

    func answer(_ node: Fingerprint, _ invokeID: String, _ answer: Result<InvokePayload, ErrorMessage>) {
        nodes[node]?.handler?.nodeAnswered(invokeID, answer)
    }

    /// What the node says to the agent, on its socket. While that socket is re-offering or
    /// reconnecting it waits, up to `eventWait` and `maxWaitingEvents`; a node with no link at all
    /// (gone), or past those bounds, is answered UNAVAILABLE (a tagged call; an untagged event is dropped).
    func nodeEvent(_ event: String, payload: JSONValue, tag: String?, on node: Fingerprint) {
        guard let link = nodes[node] else { return unavailable(tag, "the node has no session at the OpenClaw gateway") }
        if let handler = link.handler, handler.isReady { return handler.nodeEvent(event, payload: payload, tag: tag) }
        guard link.waiting.add(event, payload: payload, tag: tag, now: .now) else {
            return unavailable(tag, "\(timing.waitingEvents) calls already wait for the node's gateway session")
        }
        armWaiting(link)
    }

    /// One timer per link, for its oldest waiting call.
    private func armWaiting(_ link: NodeLink) {
        link.waitTimer?.cancel()
        guard let deadline = link.waiting.nextDeadline else { return link.waitTimer = nil }
        link.waitTimer = loop.scheduleTask(deadline: NIODeadline.uptimeNanoseconds(UInt64(max(0, deadline.nanoseconds)))) { [weak self, weak link] in
            guard let self, let link else { return }
            for expired in link.waiting.expire(now: .now) {
                unavailable(expired.tag, "the node's gateway session was not up within \(NumberText.fixed(timing.eventWait)) s")
            }
            armWaiting(link)
        }
    }

    private func unavailable(_ tag: String?, _ message: String) {
        guard let tag else { return }
        driver?.submit(.openClawEventAnswered(tag: tag, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: message, retryable: true))))
    }

    /// A link ends: what waited for its socket is answered.
    private func stop(_ link: NodeLink) {
        link.stop()
        for event in link.waiting.takeAll() { unavailable(event.tag, "the node left the gateway") }
    }

    func eventAnswered(_ tag: String, _ result: Result<JSONValue?, ErrorMessage>) {
        driver?.submit(.openClawEventAnswered(tag: tag, result))
    }

    // MARK: - From a node's socket (on the loop)

    /// A socket of the node's current link is up; false for one of an earlier link (the node
    /// dropped and reconnected while it was dialled), which must close instead.
    func attach(_ handler: OpenClawLinkHandler) -> Bool {
        guard let link = nodes[handler.node], link.token == handler.linkToken else { return false }
        link.handler = handler
        return true
    }

    func detach(_ handler: OpenClawLinkHandler) {
        guard let link = nodes[handler.node], link.token == handler.linkToken, link.handler === handler else { return }
        link.handler = nil
        link.answerCanvas(nil)
        driver?.submit(.canvasUpstream(node: handler.node, capability: nil))  // the gateway's capability died with the socket
    }

    /// The node's current socket was given a canvas capability by the gateway.
    func canvas(_ capability: String, from handler: OpenClawLinkHandler) {
        guard let link = nodes[handler.node], link.token == handler.linkToken, link.handler === handler else { return }
        driver?.submit(.canvasUpstream(node: handler.node, capability: capability))
        link.answerCanvas(capability)
    }

    /// A fresh canvas capability for the node's socket (on the loop): the relay's request met 401,
    /// or the node refreshed its own. nil when the node has no socket up, or no answer in time.
    func refreshCanvas(for node: Fingerprint) -> EventLoopFuture<String?> {
        guard let link = nodes[node], let handler = link.handler, handler.isReady else { return loop.makeSucceededFuture(nil) }
        let promise = loop.makePromise(of: String?.self)
        link.canvasWaiters.append(promise)
        if link.canvasWaiters.count == 1 { handler.refreshCanvas() }  // one request for all who wait
        // Answered once: by the reply or the socket's end (which take it from the list), or here.
        // The relay waits `timing.canvasWait` for the gateway's fresh capability, then gives up on the request.
        let expiry = loop.scheduleTask(in: .interval(timing.canvasWait)) { [weak link] in
            guard let link, let index = link.canvasWaiters.firstIndex(where: { $0.futureResult === promise.futureResult }) else { return }
            link.canvasWaiters.remove(at: index)
            promise.succeed(nil)
        }
        promise.futureResult.whenComplete { _ in expiry.cancel() }
        return promise.futureResult
    }

    func sessionUp(_ handler: OpenClawLinkHandler, protocolVersion: Int, deviceId: String, offered: [String]) {
        let node = handler.node
        logger.info("node attached to the OpenClaw gateway", metadata: ["node": "\(node)", "deviceId": "\(deviceId)", "protocol": "\(protocolVersion)"])
        guard let link = nodes[node] else { return }
        if let before = link.offered, case let added = Set(offered).subtracting(before), !added.isEmpty {
            // The gateway does not tell a node what it keeps back (issue 60 §3): say what it does.
            logger.notice(
                "offered the OpenClaw gateway more of the node's commands: \(added.sorted().joined(separator: ", ")). OpenClaw's gateway lets its agent use them at once unless its operator has approved one of the node's command sets before; then it keeps to that set, lists these in `openclaw nodes pending`, and applies an approval at the node's next connect",
                metadata: ["node": "\(node)", "deviceId": "\(deviceId)"])
        }
        link.offered = Set(offered)
        driver?.submit(.openClawSession(node: node, deviceId: deviceId, state: "connected (protocol \(protocolVersion))", approval: nil))
        // What waited for the socket goes now, in order, before a re-offer can close it again.
        link.waitTimer?.cancel()
        for event in link.waiting.takeAll() { handler.nodeEvent(event.event, payload: event.payload, tag: event.tag) }
        // Commands were added while this socket was dialled.
        if !link.unoffered.isEmpty { handler.reoffer() }
        // Whatever the gateway queued while the node was away or in the background.
        if link.foreground { handler.nodeForeground(true) }
    }

    /// The gateway issued (or rotated) the node's device token in a `hello-ok` (on the loop): the
    /// node's next connect carries it, and it is stored for the next run.
    func store(deviceToken: String, for node: Fingerprint) {
        nodes[node]?.deviceToken = deviceToken
        changeDevices("store the gateway's device token for \(node)") { devices in
            try devices.setDeviceToken(deviceToken, for: node)
            return nil
        }
    }

    /// A change to the devices file, on the I/O thread; `what` says it in the error, and a line
    /// the change returns is logged.
    private func changeDevices(_ what: String, _ change: @escaping @Sendable (OpenClawDevices) throws -> (String, Logger.Metadata)?) {
        let (devices, logger) = (devices, logger)
        io.run(on: loop) { try change(devices) }.whenComplete { result in
            switch result {
            case let .success((line, metadata)?): logger.info("\(line)", metadata: metadata)
            case .success(nil): break
            case let .failure(error): logger.error("cannot \(what): \(error)")
            }
        }
    }

    func invoke(_ invoke: OpenClawNodeSession.Invoke, on node: Fingerprint, from handler: OpenClawLinkHandler) {
        driver?.submit(.openClawInvoke(node: node, invoke))
    }

    func cancel(_ invokeID: String, on node: Fingerprint) {
        driver?.submit(.openClawCancel(node: node, invokeID: invokeID))
    }

    // MARK: - One node's socket, redialled while the node stays

    private func run(_ node: Fingerprint, token: Int, details: NodeDetails) async {
        let made: (OpenClawDevice, OpenClawDevices.Record)
        do {
            let devices = devices
            made = try await io.run(on: loop) { try devices.device(for: node, platform: details.platform) }.get()
        } catch {
            logger.error("cannot make the OpenClaw identity of \(node): \(error)")
            return
        }
        let (device, record) = made
        // What the rules offer is read again each time round.
        guard
            let commands = await onLink(
                node, token,
                { link in
                    if link.deviceToken == nil { link.deviceToken = record.deviceToken }
                    return link.commands
                })
        else { return }
        var configuration = OpenClawNodeSession.Configuration(
            device: device, claims: .node(platform: record.platform, deviceFamily: record.deviceFamily),
            // Unique per node: the gateway retires silently paired devices that share a name.
            displayName: "\(details.displayName) (lanbridge \(node.description.prefix(4)))",
            instanceId: node.description, version: options.version, modelIdentifier: details.deviceModel,
            caps: details.caps, commands: commands,
            sharedToken: options.token.map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }, deviceToken: record.deviceToken)
        var redial = OpenClawRedial(timing)
        // Shown until the gateway lets the device in: redials do not hide it.
        var approval: RuntimeStatus.GatewayApproval?
        var retry = OpenClawNodeSession.Retry.backoff
        while !Task.isCancelled {
            // What to offer, and the device token the gateway issued last (it may have come in the
            // previous socket's hello-ok).
            if let (commands, deviceToken) = await onLink(node, token, { ($0.commands, $0.deviceToken) }) {
                (configuration.commands, configuration.deviceToken) = (commands, deviceToken)
            }
            // A re-offer is down for a moment only: the state it had stays until the session says more.
            if retry != .reoffer { driver?.submit(.openClawSession(node: node, deviceId: device.deviceId, state: approval?.summary ?? "connecting", approval: approval)) }
            let started = Date()
            let reason: String
            (reason, retry) = await connectOnce(node, token: token, configuration)
            if Task.isCancelled { break }
            let holdsDeviceToken = await onLink(node, token, { $0.deviceToken != nil }) ?? false
            let next = redial.ended(retry, lasted: Date().timeIntervalSince(started), holdsDeviceToken: holdsDeviceToken)
            approval = next.approval
            if next.signV2 { configuration.signature = .v2 }
            if next.forgetDeviceToken {
                _ = await onLink(node, token) { $0.deviceToken = nil }
                changeDevices("forget the gateway's device token for \(node)") { devices in
                    try devices.setDeviceToken(nil, for: node)
                    return nil
                }
            }
            if let held = next.approval, next.newHold {
                logger.warning("the OpenClaw gateway holds node \(node)'s device (\(device.deviceId)) for its operator: \(held.summary)")
            }
            if let hint = next.operatorHint { logger.warning("OpenClaw gateway refused node \(node): \(reason); \(hint)") }
            if !next.quiet {
                logger.info("node's OpenClaw socket down (\(reason)); retrying in \(NumberText.fixed(next.wait)) s", metadata: ["node": "\(node)"])
                driver?.submit(.openClawSession(node: node, deviceId: device.deviceId, state: approval?.summary ?? "disconnected: \(reason)", approval: approval))
            }
            if next.wait > 0 { try? await Task.sleep(for: .milliseconds(Int(next.wait * 1000))) }
        }
    }

    /// `body` on the loop with the node's current link, or nil if this link is gone.
    private func onLink<T: Sendable>(_ node: Fingerprint, _ token: Int, _ body: @escaping (NodeLink) -> T) async -> T? {
        try? await loop.submit { () -> T? in
            guard let link = self.nodes[node], link.token == token else { return nil }
            return body(link)
        }.get()
    }

    /// One socket, from dial to close. The handshake holds one of the `maxConnecting` slots.
    private func connectOnce(_ node: Fingerprint, token: Int, _ configuration: OpenClawNodeSession.Configuration) async -> (String, OpenClawNodeSession.Retry) {
        // The node may leave while this waits for a slot or dials: both give up at once.
        guard await connecting.acquire() else { return ("the node left", .backoff) }
        var released = false
        defer { if !released { Task { await connecting.release() } } }
        let ending = OpenClawLinkHandler.Ending()
        let handshake = loop.makePromise(of: Void.self)
        let (logger, links) = (logger, self)
        let channel: any Channel
        do {
            channel = try await options.dialer.connect(on: loop, maxMessageSize: options.maxMessageSize) { channel in
                let session = OpenClawNodeSession(configuration, nowMs: OpenClawLinkHandler.nowMs)
                try channel.pipeline.syncOperations.addHandler(
                    OpenClawLinkHandler(
                        node: node, linkToken: token, session: session, links: links,
                        ending: ending, handshake: handshake, logger: logger))
            }
        } catch {
            handshake.succeed()
            return ("\(error)", .backoff)
        }
        if Task.isCancelled {
            channel.close(promise: nil)
            handshake.succeed()
        }
        // The handshake is short (the session ends it after 15 s): the slot is held for it only.
        try? await handshake.futureResult.get()
        released = true
        await connecting.release()
        await withTaskCancellationHandler {
            try? await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
        return ending.value
    }
}
