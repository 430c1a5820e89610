import FoundationEssentials
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Logging

/// Random sequences of events through the core's one entry point, on a fake clock, its promises
/// checked after every step (issue 39 §2). What chooses the events is the caller's: a seeded
/// generator in LanbridgeBridgeTests, libFuzzer's bytes in Fuzz/ (`core` target).
///
///   - every request is answered at most once, and only where it was asked (gateway generation,
///     control token);
///   - after the shutdown every request has its answer (none is left held or in flight), but a
///     gateway request whose link went down: its answer had nowhere to go;
///   - a revoked node is sent no invoke, and no invoke goes to a closed connection;
///   - the invokes in flight to the node never exceed `maxConcurrentInvokes`, nor those held
///     their bounds;
///   - the canvas relay's every question about a capability is answered once, and a capability
///     opens something only while its node has a paired session (issue 49: canvas use is an event);
///   - while an ask rule stands for `camera.snap` (issue 52), the node is sent no more of them than
///     the operator approved, and the invokes waiting for an answer never exceed their bounds;
///   - nothing the invoke book decided is left in its buffer after an event (issue 62: it folds itself).
public struct CoreWalk {
    /// Where the walk's choices come from: a number in `0..<bound` each time.
    public protocol Choices {
        /// Nil when there are no more (the walk ends).
        mutating func next(below bound: Int) -> Int?
    }

    var core: BridgeCore
    var now = Moment(seconds: 1000)
    let wall = Date(timeIntervalSince1970: 1_800_000_000)
    let key: X25519.KeyPair
    var state: PairingState
    var revoked = false
    var generation = 1
    var gatewayUp = true
    var nextRequest = 0
    var nextConnection: ConnectionID = 0
    var open: Set<ConnectionID> = []
    /// What each request waits for: its target, and the answers it got.
    var asked: [String: (target: AnswerTarget, answers: Int)] = [:]
    /// Gateway generations whose link went down.
    var deadGenerations: Set<Int> = []
    /// Invokes sent to each connection, not yet answered by it.
    var outstanding: [ConnectionID: [Invoke]] = [:]
    /// The node's canvas capabilities, as its welcomes and grants named them (newest last).
    var capabilities: [String] = []
    /// The relay's questions not answered yet, and the next one's number.
    var canvasAsked: Set<Int> = []
    var nextCanvasAsk = 0
    /// Whether the ask rule for `camera.snap` stands, the operator's approvals while it did, and
    /// the `camera.snap` invokes sent to the node meanwhile.
    var askRule = false
    var approvals = 0
    var askedSends = 0
    var storeVersion = 0
    /// What broke a promise, by step (empty: all kept).
    public private(set) var problems: [String] = []
    /// The last steps walked and what the core did, to replay a failure by eye (`trace`).
    var recent: [(step: String, now: Moment, actions: [BridgeAction])] = []
    public var trace: [String] { recent.map { "\($0.step) at \($0.now): " + $0.actions.map { "\($0)".prefix(200) }.joined(separator: "; ") } }

    var nodeId: Fingerprint { Fingerprint(publicKey: key.publicKey) }

    /// A core with one node paired (`camera.snap` and `device.info` allowed and declared; the
    /// camera needs the foreground) and the gateway link of generation 1 up.
    /// The same node key each walk, so a fuzzer's input replays exactly.
    public init() throws {
        key = try X25519.KeyPair(privateKey: SecureBytes(count: 32) { $0.initializeMemory(as: UInt8.self, repeating: 7) })
        core = try Self.pairedCore(key: key, wall: wall)
        state = core.lastState
        take(core.handle(.gatewayUp(generation: 1), now: now, wall: wall), step: "start")
        // A canvas relay, so every paired session gets a capability to ask about.
        take(
            core.handle(
                .canvas(
                    CanvasRelayInfo(port: 18793, tlsSha256: String(repeating: "a", count: 64), upstreamOrigins: ["http://127.0.0.1:18789"]),
                    status: RuntimeStatus.Canvas(listening: ["127.0.0.1:18793"], tlsSha256: String(repeating: "a", count: 64), upstream: "x")),
                now: now, wall: wall), step: "start")
    }

    /// The core LanbridgeBridgeTests start from too: one node paired under `key`, no link up.
    package static func pairedCore(
        key: X25519.KeyPair, wall: Date, gateway: BridgeCore.GatewayKind = .lanbridge, random: @escaping @Sendable (Int) -> [UInt8] = { SecureRandom.bytes($0) }
    ) throws -> BridgeCore {
        var state = PairingState()
        let details = NodeDetails(
            displayName: "Ada's phone", platform: "ios", osVersion: "18", appVersion: "1", deviceModel: "x",
            caps: ["camera"], commands: ["camera.snap", "device.info"], flags: .init(requiresForeground: true))
        guard let publicKey = PublicKey(bytes: key.publicKey) else { throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "a bad test key") }
        let request = try state.requestPairing(key: publicKey, details: details, source: "10.0.0.5", now: wall)
        state.setCode("123456", requestId: request.requestId)
        _ = try state.approve(requestId: request.requestId, code: "123456", access: AccessRules(allow: ["camera.snap", "device.info"]), now: wall)
        let core = BridgeCore(
            name: "test", settings: BridgeSettings(), pairingTiming: .standard,
            runtime: RuntimeStatus(bridgeName: "test", listening: [], startedAt: wall),
            initial: state, pairedVersion: "v1", gateway: gateway, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, random: random)
        return core
    }

    /// Walks `steps` events (fewer if the choices run out), then shuts the core down and checks
    /// that everything was answered. The problems found, if any, are in `problems`.
    public mutating func walk(_ choices: inout some Choices, steps: Int) {
        for index in 0..<steps {
            guard problems.isEmpty, let roll = choices.next(below: 100), step(roll, &choices, name: "step \(index)") else { break }
        }
        take(core.handle(.shutdown, now: now, wall: wall), step: "shutdown")
        guard problems.isEmpty else { return }
        if !canvasAsked.isEmpty { problems.append("the relay's questions never answered: \(canvasAsked.sorted().prefix(5))") }
        let unanswered = asked.filter { _, entry in
            if case let .gateway(generation, _) = entry.target, deadGenerations.contains(generation) { return false }
            return entry.answers == 0
        }.map(\.key).sorted()
        if !unanswered.isEmpty { problems.append("never answered: \(unanswered.prefix(5))") }
    }

    /// One event chosen by `roll`; false when the choices ran out.
    mutating func step(_ roll: Int, _ choices: inout some Choices, name: String) -> Bool {
        // One of `items`: nil when the choices ran out (the walk ends), .some(nil) when there is
        // nothing to pick (the step does nothing).
        func pick<T>(_ items: some Collection<T>) -> T?? {
            guard !items.isEmpty else { return .some(nil) }
            guard let n = choices.next(below: items.count) else { return nil }
            return .some(items[items.index(items.startIndex, offsetBy: n)])
        }
        let openSorted = open.sorted()
        switch roll {
        case 0..<10:  // the node connects (again)
            nextConnection += 1
            let id = nextConnection
            open.insert(id)
            let opening = BridgeCore.Opening(
                id: id,
                handshake: .init(
                    remoteStaticKey: key.publicKey, handshakeHash: Array(repeating: UInt8(id & 0xFF), count: 32),
                    version: 1, handshake: .xx), address: "10.0.0.5", peer: "10.0.0.5:\(4000 + id)", slot: nil,
                local: "10.0.0.1")
            take(core.handle(.opened(opening), now: now, wall: wall), step: name)
        case 10..<15:  // a connection drops
            guard let picked = pick(openSorted) else { return false }
            if let id = picked {
                open.remove(id)
                outstanding[id] = nil
                take(core.handle(.closed(id), now: now, wall: wall), step: name)
            }
        case 15..<45:  // the gateway (while its link is up) or the operator invokes
            guard gatewayUp || roll < 20 else { return true }
            guard let command = pick(["device.info", "camera.snap", "system.run"]), let hold = choices.next(below: 3) else { return false }
            take(request(command!, control: roll < 20, holdMs: [nil, 300, 3000][hold]), step: name)
        case 45..<70:  // the node answers something it was sent, on the connection it came on, or on another
            guard let picked = pick(outstanding.filter { !$0.value.isEmpty }.keys.sorted()), let other = choices.next(below: 5) else { return false }
            guard let id = picked, var list = outstanding[id] else { return true }
            let invoke = list.removeFirst()
            outstanding[id] = list
            var on = id
            if other == 0, let elsewhere = pick(openSorted), let elsewhere { on = elsewhere }
            let bytes = Array("{\"type\":\"invoke.result\",\"id\":\"\(invoke.id)\",\"ok\":true,\"payload\":{\"x\":1}}".utf8)
            if on != id { outstanding[id, default: []].insert(invoke, at: 0) }  // still owed where it went
            take(core.handle(.received(bytes, from: on), now: now, wall: wall), step: name)
        case 70..<73:  // the app goes to the background or foreground
            guard let picked = pick(openSorted), let front = choices.next(below: 2) else { return false }
            if let id = picked {
                take(core.handle(.received(Array("{\"type\":\"state\",\"foreground\":\(front == 1)}".utf8), from: id), now: now, wall: wall), step: name)
            }
        case 73..<78:  // the gateway link drops or comes back
            if gatewayUp {
                gatewayUp = false
                deadGenerations.insert(generation)
                take(core.handle(.gatewayDown(generation: generation), now: now, wall: wall), step: name)
            } else {
                gatewayUp = true
                generation += 1
                take(core.handle(.gatewayUp(generation: generation), now: now, wall: wall), step: name)
            }
        case 78..<80:  // the operator revokes the node
            if !revoked, (try? state.revoke(nodeId: nodeId.description)) != nil {
                revoked = true
                take(core.handle(.storeChanged(state, version: "v-revoked"), now: now, wall: wall), step: name)
            }
        case 85..<89:  // the canvas relay asks about the node's latest capability, an older one, or a made-up one
            guard let which = choices.next(below: 3) else { return false }
            let capability = which == 0 ? capabilities.last : which == 1 ? capabilities.first : "madeUpCapability-xxxxxxx"
            nextCanvasAsk += 1
            canvasAsked.insert(nextCanvasAsk)
            let sessionUp = !revoked && open.contains { core.connections[$0]?.isPaired == true }
            let actions = core.handle(.canvasUse(capability ?? "none", reply: nextCanvasAsk), now: now, wall: wall)
            for case let .canvasUsed(_, use) in actions where !sessionUp {
                if case .granted = use.lookup { problems.append("\(name): a capability opened the canvas with no paired session") }
            }
            take(actions, step: name)
        case 89..<90:  // the node's socket at an OpenClaw gateway gets (or loses) the gateway's capability
            guard let has = choices.next(below: 2) else { return false }
            take(core.handle(.canvasUpstream(node: nodeId, capability: has == 1 ? "upstreamCapability-xxxxxx" : nil), now: now, wall: wall), step: name)
        case 90..<92:  // the operator adds or removes the ask rule for camera.snap
            guard !revoked else { return true }
            let changed = askRule ? try? state.removeRule("camera.snap", kind: .ask, node: nodeId.description) : try? state.ask("camera.snap", node: nodeId.description)
            guard changed != nil else { return true }
            askRule.toggle()
            storeVersion += 1
            take(core.handle(.storeChanged(state, version: "v-ask-\(storeVersion)"), now: now, wall: wall), step: name)
        case 92..<95:  // the operator answers an invoke that waits (or an ID that does not)
            guard let picked = pick(core.book.asked.entries.map(\.id) + ["0000000000"]), let approve = choices.next(below: 2) else { return false }
            guard let id = picked else { return true }
            nextRequest += 1
            let target = AnswerTarget.control(nextRequest)
            asked[Self.key(of: target)] = (target, 0)
            let params: JSONValue = ["id": .string(id), "approve": .bool(approve == 1), "answeredBy": "uid:0"]
            let actions = core.handle(.request(method: ControlMethod.askAnswer.name, params: params, from: target), now: now, wall: wall)
            let accepted = actions.contains { if case .answer(target, .success) = $0 { true } else { false } }
            if accepted, approve == 1, askRule { approvals += 1 }
            take(actions, step: name)
        case 80..<85:  // an operator's control client leaves
            let tokens = asked.values.compactMap { if case let .control(token) = $0.target, $0.answers == 0 { token } else { nil } }.sorted()
            guard let picked = pick(tokens) else { return false }
            if let token = picked { take(core.handle(.controlLeft([token]), now: now, wall: wall), step: name) }
        default:  // time passes, deadlines fire
            guard let ms = choices.next(below: 2000) else { return false }
            now = now + Double(ms + 1) / 1000
            take(core.handle(.timerFired, now: now, wall: wall), step: name)
        }
        return true
    }

    static func key(of target: AnswerTarget) -> String {
        switch target {
        case let .gateway(generation, id): "g\(generation)/\(id)"
        case let .control(token): "c\(token)"
        case let .openClaw(node, id): "o\(node)/\(id)"
        }
    }

    /// Applies the actions the core returned, and checks them.
    mutating func take(_ actions: [BridgeAction], step: String) {
        if recent.count == 64 { recent.removeFirst(32) }
        recent.append((step, now, actions))
        for action in actions {
            switch action {
            case let .answer(target, _):
                let key = Self.key(of: target)
                guard var entry = asked[key] else { problems.append("\(step): an answer nobody asked for: \(key)"); continue }
                entry.answers += 1
                asked[key] = entry
                if entry.answers > 1 { problems.append("\(step): \(key) answered \(entry.answers) times") }
            case let .send(id, invoke as Invoke):
                if revoked { problems.append("\(step): invoke \(invoke.id) sent to a revoked node") }
                if askRule, invoke.command == "camera.snap" {
                    askedSends += 1
                    if askedSends > approvals { problems.append("\(step): camera.snap sent \(askedSends) times under its ask rule, approved \(approvals)") }
                }
                if !open.contains(id) { problems.append("\(step): invoke sent to closed connection \(id)") }
                outstanding[id, default: []].append(invoke)
            case let .close(id):
                open.remove(id)
                outstanding[id] = nil
                take(core.handle(.closed(id), now: now, wall: wall), step: step)  // the driver reports the close back; its answers count too
            case let .send(_, welcome as Welcome):
                if let url = welcome.canvas?.url { capabilities.append(String(url.split(separator: "/").last ?? "")) }
            case let .send(_, grant as CanvasGrant):
                if let url = grant.canvas?.url { capabilities.append(String(url.split(separator: "/").last ?? "")) }
            case let .canvasUsed(reply, _):
                if canvasAsked.remove(reply) == nil { problems.append("\(step): the relay's question \(reply) answered twice or never asked") }
            default:
                break
            }
        }
        // The book's count: an invoke that timed out leaves it, though the node may still answer.
        let limit = BridgeSettings().limits[.maxConcurrentInvokes], inFlight = core.book.inFlight(for: nodeId)
        if inFlight > limit { problems.append("\(step): \(inFlight) invokes in flight to the node, over \(limit)") }
        let held = (core.book.held.count, core.book.held.limits)
        if held.0 > held.1.total || held.0 > held.1.perNode { problems.append("\(step): \(held.0) invokes held, over \(held.1)") }
        let waiting = (core.book.asked.count, core.book.asked.limits)
        if waiting.0 > waiting.1.total || waiting.0 > waiting.1.perNode { problems.append("\(step): \(waiting.0) invokes wait for the operator, over \(waiting.1)") }
        // Issue 62 §3: the book folds itself; nothing it decided waits in its buffer after an event.
        if core.book.untaken > 0 { problems.append("\(step): \(core.book.untaken) of the book's actions left untaken after the event") }
    }

    /// A `node.invoke`, held for its node `holdMs` if given (PROTOCOL.md §12.3).
    mutating func request(_ command: String, control: Bool, holdMs: Int?) -> [BridgeAction] {
        nextRequest += 1
        let target: AnswerTarget = control ? .control(nextRequest) : .gateway(generation: generation, requestID: "r\(nextRequest)")
        asked[Self.key(of: target)] = (target, 0)
        var params: [String: JSONValue] = [
            "nodeId": .string(nodeId.description), "command": .string(command), "idempotencyKey": .string("k\(nextRequest)"),
            "timeoutMs": .number(Double([50, 500, 5000][nextRequest % 3])),
        ]
        if let holdMs { params["hold"] = ["maxMs": .number(Double(holdMs))] }
        return core.handle(.request(method: ControlMethod.nodeInvoke.name, params: .object(params), from: target), now: now, wall: wall)
    }
}

extension CoreWalk {
    /// libFuzzer's input as choices: a byte each (two past 256), until it runs out.
    public struct Bytes: Choices {
        var bytes: ArraySlice<UInt8>
        public init(_ bytes: some Collection<UInt8>) { self.bytes = ArraySlice(bytes) }
        public mutating func next(below bound: Int) -> Int? {
            if bound <= 256 {
                guard let byte = bytes.popFirst() else { return nil }
                return Int(byte) % bound
            }
            guard bytes.count >= 2 else { return nil }
            let value = Int(bytes.removeFirst()) << 8 | Int(bytes.removeFirst())
            return value % bound
        }
    }
}
