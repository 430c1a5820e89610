import Foundation
import LanbridgeProtocol
import LanbridgeState
import Testing
import TestSupport

/// gateway-sim ⇄ lanbridge ⇄ node-sim, as real processes over real sockets (issue 5).
@Suite(.serialized)
struct GatewayEndToEndTests {
    @Test func invokeReachesTheNodeAndTheSnapshotIsAPNG() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let navigated = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://example.com"])
        #expect(navigated.ok && navigated.payload?["url"] == "https://example.com")
        let snapshot = try stack.gateway.invoke("phone", "canvas.snapshot")  // by display name, too
        let png = try #require(snapshot.payload?["base64"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])

        let listed = try stack.gateway.call("GET", "/nodes")
        guard case let .array(nodes)? = listed.payload?["nodes"] else { Issue.record("no node list"); return }
        #expect(nodes.count == 1)
        #expect(nodes.first?["connected"] == true && nodes.first?["foreground"] == true && nodes.first?["platform"] == "ios")
        #expect(nodes.first?["allowedCommands"] == ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot"])
        let described = try stack.gateway.call("GET", "/nodes/\(stack.nodeID)")
        #expect(described.payload?["nodeId"]?.stringValue == stack.nodeID)
        #expect(try stack.gateway.call("GET", "/nodes/nobody").code == ErrorMessage.nodeNotFound)
    }

    @Test func aCommandOutsideTheAllowlistIsDeniedAndAudited() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let denied = try stack.gateway.invoke(stack.nodeID, "system.info")  // declared, but not in the ios defaults
        #expect(denied.code == ErrorMessage.forbidden)
        #expect(denied.error?["details"]?["reason"] == "NOT_ALLOWLISTED")
        #expect(denied.error?["details"]?["command"] == "system.info")
        let audit = try AuditLog(directory: StateDirectory(url: stack.bridge.state.url)).entries()
        #expect(audit.contains { $0.event == "invoke.denied" && $0.nodeId == stack.nodeID && $0.detail == "system.info: NOT_ALLOWLISTED" })

        // `nodes allow` applies to the very next invoke; `nodes deny` carves one out of a wildcard.
        #expect(try stack.cli(["nodes", "allow", stack.nodeID, "system.info"]).status == 0)
        #expect(try stack.gateway.invoke(stack.nodeID, "system.info").ok)
        #expect(try stack.cli(["nodes", "deny", "phone", "canvas.snapshot"]).status == 0)
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot").code == ErrorMessage.forbidden)
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.hide").ok, "the rest of canvas.* stays allowed")
        // A typo is refused by name instead of becoming a rule that never matches.
        let typo = try stack.cli(["nodes", "allow", stack.nodeID, "camera.snpa"])
        #expect(typo.status == 1 && typo.stderr.contains("camera.snpa"))
    }

    @Test func anAllowedCommandTheNodeNeverDeclaredIsDenied() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let denied = try stack.gateway.invoke(stack.nodeID, "camera.snap")  // in the ios defaults; node-sim has no camera
        #expect(denied.code == ErrorMessage.forbidden)
        #expect(denied.error?["details"]?["reason"] == "NOT_DECLARED")
    }

    @Test func aBackgroundedNodeFailsForegroundCommandsFastAtTheBridge() throws {
        let stack = try RelayStack(config: #"{"access": {"backgroundRetryAfterMs": 7000}}"#)
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "system.info"])
        stack.node.process.write(line: "bg")
        try stack.gateway.waitForEvent("background")
        let refused = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://never.example"])
        #expect(refused.code == ErrorMessage.backgroundUnavailable)
        #expect(refused.error?["retryable"] == true && refused.error?["retryAfterMs"] == 7000)
        #expect(refused.error?["details"]?["nodeId"]?.stringValue == stack.nodeID && refused.error?["details"]?["command"] == "canvas.navigate")
        #expect(try stack.gateway.invoke(stack.nodeID, "system.info").ok, "background-safe commands still run")
        // No round trip happened: back in front, the canvas never navigated.
        stack.node.process.write(line: "fg")
        try stack.gateway.waitForEvent("foreground")
        let info = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://now.example"])
        #expect(info.ok)
    }

    @Test func rateAndConcurrencyLimitsAnswerRateLimited() throws {
        let stack = try RelayStack(config: #"{"limits": {"snapshotsPerMinute": 5, "maxConcurrentInvokes": 2}}"#)
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "device.echo"])
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot").ok)
        let second = try stack.gateway.invoke(stack.nodeID, "canvas.snapshot")
        #expect(second.code == ErrorMessage.rateLimited)
        #expect((second.error?["retryAfterMs"].flatMap { if case let .number(n) = $0 { n } else { nil } } ?? 0) > 0)

        let answers = inParallel(3) { _ in try? stack.gateway.invoke(stack.nodeID, "device.echo", params: ["delayMs": 1500]) }
        #expect(answers.filter { $0?.ok == true }.count == 2)
        #expect(answers.filter { $0?.code == ErrorMessage.rateLimited }.count == 1)
    }

    @Test func anOversizedResultIsRefusedAndTheNodeStaysConnected() throws {
        let stack = try RelayStack(config: #"{"limits": {"maxResultBytes": 65536}}"#)
        defer { stack.stop() }
        let big = try stack.gateway.invoke(stack.nodeID, "canvas.snapshot")  // ~256 KiB of base64
        #expect(big.code == ErrorMessage.payloadTooLarge)
        #expect(big.error?["details"]?["limit"] == 65536)
        let small = try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: ["width": 16, "height": 16])
        #expect(small.ok, "the same connection carries the next result")
    }

    @Test func aSlowNodeTimesOutAndItsLateResultIsDropped() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "device.echo"])
        let slow = try stack.gateway.invoke(stack.nodeID, "device.echo", params: ["delayMs": 1500], timeoutMs: 200)
        #expect(slow.code == ErrorMessage.timeout && slow.error?["retryable"] == true)
        try stack.bridge.waitForLog("dropped a result")
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo", params: ["n": 1]).payload?["n"] == 1)
    }

    @Test func aNodeThatDropsMidInvokeFailsItAtOnce() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "device.echo"])
        let inFlight = Background { try? stack.gateway.invoke(stack.nodeID, "device.echo", params: ["delayMs": 30000], timeoutMs: 60000) }
        try stack.node.waitFor("invoke device.echo")  // it reached the node
        stack.node.process.signal(SIGKILL)
        stack.node.process.wait()
        let failed = inFlight.value
        #expect(failed?.code == ErrorMessage.nodeNotConnected, "failed at once, not after the 60 s timeout")
        try stack.gateway.waitForEvent("disconnected")
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo").code == ErrorMessage.nodeNotConnected)
    }
}

typealias Answer = SimulatedGateway.Answer

/// Runs `body` on `count` real threads at once (the cooperative pool has only 2 here) and returns the results in order.
func inParallel<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Results<T>(count)
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            results.set(i, body(i))
            group.leave()
        }
    }
    group.wait()
    return results.values
}

final class Results<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [T?]
    init(_ count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ value: T) { lock.withLock { slots[i] = value } }
    var values: [T] { lock.withLock { slots.map { $0! } } }
}

/// A blocking call on its own thread; `value` waits for it.
final class Background<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: T?
    init(_ body: @escaping @Sendable () -> T) {
        Thread.detachNewThread { [self] in
            result = body()
            done.signal()
        }
    }
    var value: T {
        done.wait()
        done.signal()
        return result!
    }
}
