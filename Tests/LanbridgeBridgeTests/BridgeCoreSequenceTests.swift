import Foundation
import LanbridgeCrypto
@testable import LanbridgeBridge
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Logging
import TestSupport
import Testing

/// Issue 39: random sequences of events through the core on a fake clock, its invariants checked
/// after every step. Seeded (SplitMix), so a failure names its seed and step and replays; CI runs
/// the seeds below, `LANBRIDGE_CORE_SEQUENCES=N` runs N more.
///
///   - every request is answered at most once, and only where it was asked (gateway generation,
///     control token);
///   - after the shutdown every request has its answer (none is left held or in flight), but a
///     gateway request whose link went down: its answer had nowhere to go;
///   - a revoked node is sent no invoke, and no invoke's answer comes from a connection that was
///     not sent it;
///   - the invokes in flight to a node never exceed `maxConcurrentInvokes`.
struct BridgeCoreSequenceTests {
    static let seeds: [UInt64] = Array(1...40) + (ProcessInfo.processInfo.environment["LANBRIDGE_CORE_SEQUENCES"].flatMap(Int.init).map { n in (0..<UInt64(n)).map { 1000 + $0 } } ?? [])

    struct Run {
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
        /// What each request is waiting for: its target, and the answers it got.
        var asked: [String: (target: AnswerTarget, answers: Int)] = [:]
        /// Gateway generations whose link went down.
        var deadGenerations: Set<Int> = []
        /// Invokes sent to each connection, not yet answered by it.
        var outstanding: [ConnectionID: [Invoke]] = [:]
        var problems: [String] = []

        var nodeId: Fingerprint { Fingerprint(publicKey: key.publicKey) }

        static func key(of target: AnswerTarget) -> String {
            switch target {
            case let .gateway(generation, id): "g\(generation)/\(id)"
            case let .control(token): "c\(token)"
            case let .openClaw(node, id): "o\(node)/\(id)"
            }
        }

        /// Applies the actions the core returned and checks them.
        mutating func take(_ actions: [BridgeAction], step: String) {
            var inFlight: [ConnectionID: Int] = [:]
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
                    if !open.contains(id) { problems.append("\(step): invoke sent to closed connection \(id)") }
                    outstanding[id, default: []].append(invoke)
                    inFlight[id, default: 0] += 1
                case let .close(id):
                    open.remove(id)
                    outstanding[id] = nil
                    _ = core.channelClosed(id, now: now)  // the driver reports the close back
                default:
                    break
                }
            }
            let limit = BridgeSettings().limits.maxConcurrentInvokes
            for (id, list) in outstanding where list.count > limit {
                problems.append("\(step): \(list.count) invokes in flight on connection \(id), over \(limit)")
            }
        }

        mutating func request(_ command: String, control: Bool) -> [BridgeAction] {
            nextRequest += 1
            let target: AnswerTarget = control ? .control(nextRequest) : .gateway(generation: generation, requestID: "r\(nextRequest)")
            asked[Self.key(of: target)] = (target, 0)
            let params: JSONValue = ["nodeId": .string(nodeId.description), "command": .string(command), "idempotencyKey": .string("k\(nextRequest)"),
                                     "timeoutMs": .number(Double([50, 500, 5000][nextRequest % 3]))]
            return core.request(method: GatewayMethod.nodeInvoke, params: params, from: target, now: now, wall: wall)
        }
    }

    /// BridgeCoreTests' core: one paired node, the gateway link up.
    static func makeRun() throws -> Run {
        let base = BridgeCoreTests()
        let core = try base.core(gatewayUp: false)
        var run = Run(core: core, key: base.phoneKey, state: core.lastState)
        run.take(run.core.gatewayUp(1, now: run.now), step: "start")
        return run
    }

    @Test(arguments: seeds)
    func randomEventsKeepTheCoresPromises(seed: UInt64) throws {
        var rng = SplitMix(state: seed)
        var run = try Self.makeRun()
        for index in 0..<300 {
            let step = "seed \(seed) step \(index)"
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<10:  // the node connects (again)
                run.nextConnection += 1
                let id = run.nextConnection
                run.open.insert(id)
                let opening = BridgeCore.Opening(id: id, handshake: .init(remoteStaticKey: run.key.publicKey, handshakeHash: Array(repeating: UInt8(id & 0xFF), count: 32),
                                                                          version: 1, handshake: .xx), address: "10.0.0.5", peer: "10.0.0.5:\(4000 + id)", slot: nil)
                run.take(run.core.opened(opening, now: run.now, wall: run.wall), step: step)
            case 10..<15:  // a connection drops
                if let id = run.open.randomElement(using: &rng) {
                    run.open.remove(id)
                    run.outstanding[id] = nil
                    run.take(run.core.channelClosed(id, now: run.now), step: step)
                }
            case 15..<45:  // the gateway (while its link is up) or the operator invokes
                guard run.gatewayUp || roll < 20 else { continue }
                run.take(run.request(["device.info", "camera.snap", "system.run"][Int.random(in: 0..<3, using: &rng)], control: roll < 20), step: step)
            case 45..<70:  // the node answers something it was sent, on the connection it came on, or on another
                guard let id = run.outstanding.filter({ !$0.value.isEmpty }).keys.randomElement(using: &rng), var list = run.outstanding[id] else { continue }
                let invoke = list.removeFirst()
                run.outstanding[id] = list
                let on = Int.random(in: 0..<5, using: &rng) == 0 ? (run.open.randomElement(using: &rng) ?? id) : id
                let bytes = Array("{\"type\":\"invoke.result\",\"id\":\"\(invoke.id)\",\"ok\":true,\"payload\":{\"x\":1}}".utf8)
                if on != id { run.outstanding[id, default: []].insert(invoke, at: 0) }  // still owed where it went
                run.take(run.core.received(bytes, from: on, now: run.now, wall: run.wall), step: step)
            case 70..<73:  // the app goes to the background or foreground
                if let id = run.open.randomElement(using: &rng) {
                    let state = Array("{\"type\":\"state\",\"foreground\":\(Bool.random(using: &rng))}".utf8)
                    run.take(run.core.received(state, from: id, now: run.now, wall: run.wall), step: step)
                }
            case 73..<78:  // the gateway link drops or comes back
                if run.gatewayUp {
                    run.gatewayUp = false
                    run.deadGenerations.insert(run.generation)
                    run.take(run.core.gatewayDown(run.generation, now: run.now), step: step)
                } else {
                    run.gatewayUp = true
                    run.generation += 1
                    run.take(run.core.gatewayUp(run.generation, now: run.now), step: step)
                }
            case 78..<80:  // the operator revokes the node
                if !run.revoked, let removed = try? run.state.revoke(nodeId: run.nodeId.description) {
                    _ = removed
                    run.revoked = true
                    run.take(run.core.storeChanged(run.state, version: "v-revoked", now: run.now), step: step)
                }
            case 80..<85:  // an operator's control client leaves
                let tokens = Set(run.asked.values.compactMap { if case let .control(token) = $0.target, $0.answers == 0 { token } else { nil } })
                if let token = tokens.randomElement(using: &rng) { run.take(run.core.controlLeft([token], now: run.now), step: step) }
            default:  // time passes, deadlines fire
                run.now = run.now + Double(Int.random(in: 1...2000, using: &rng)) / 1000
                run.take(run.core.timerFired(now: run.now), step: step)
            }
            if !run.problems.isEmpty { break }
        }
        run.take(run.core.shutdown(now: run.now, wall: run.wall), step: "seed \(seed) shutdown")
        let unanswered = run.asked.filter { key, entry in
            if case let .gateway(generation, _) = entry.target, run.deadGenerations.contains(generation) { return false }
            return entry.answers == 0
        }.map(\.key).sorted()
        #expect(run.problems.isEmpty, "\(run.problems.prefix(5))")
        #expect(unanswered.isEmpty, "seed \(seed): never answered: \(unanswered.prefix(5))")
    }
}
