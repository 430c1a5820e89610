import Foundation
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport
import NIOConcurrencyHelpers

/// gateway-sim ⇄ lanbridge ⇄ node-sim, as real processes over real sockets (issue 5).
@Suite(.serialized)
struct GatewayEndToEndTests {
    @Test func invokeReachesTheNodeAndTheSnapshotIsAPNG() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let navigated = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://example.com"])
        #expect(navigated.ok && navigated.payload?["url"] == "https://example.com")
        // node-sim's canvas.navigate is a typed handler: params of another shape never reach it.
        let mistyped = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["href": 5])
        #expect(mistyped.code == "COMMAND_FAILED" && mistyped.error?["details"]?["nodeError"]?["code"] == "INVALID_PARAMS", "\(mistyped)")
        let snapshot = try stack.gateway.invoke("phone", "canvas.snapshot")  // by display name, too
        let png = try #require(snapshot.payload?["base64"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])

        let listed = try stack.gateway.call("GET", "/nodes")
        guard case let .array(nodes)? = listed.payload?["nodes"] else { Issue.record("no node list"); return }
        #expect(nodes.count == 1)
        #expect(nodes.first?["connected"] == true && nodes.first?["foreground"] == true && nodes.first?["platform"] == "ios")
        #expect(nodes.first?["allowedCommands"] == ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot", "canvas.a2ui.pushJSONL"])
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
        for _ in 0..<5 { _ = try stack.gateway.invoke(stack.nodeID, "system.info") }
        let audit = try AuditLog(directory: StateDirectory(url: stack.bridge.state.url)).entries()
        let denials = audit.filter { $0.event == "invoke.denied" }
        #expect(denials.count == 1, "a repeated denial is counted, not written six times")
        #expect(denials.first?.nodeId == stack.nodeID && denials.first?.detail == "system.info: NOT_ALLOWLISTED")

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
        let denied = try stack.gateway.invoke(stack.nodeID, "camera.list")  // in the ios defaults; node-sim has no camera
        #expect(denied.code == ErrorMessage.forbidden)
        #expect(denied.error?["details"]?["reason"] == "NOT_DECLARED")
    }

    @Test func aBackgroundedNodeFailsForegroundCommandsFastAtTheBridge() throws {
        let stack = try RelayStack(config: #"{"access": {"backgroundRetryAfterMs": 7000}}"#)
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "system.info"])
        try stack.backgroundNode()
        let refused = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://never.example"])
        #expect(refused.code == ErrorMessage.backgroundUnavailable)
        #expect(refused.error?["retryable"] == true && refused.error?["retryAfterMs"] == 7000)
        #expect(refused.error?["details"]?["nodeId"]?.stringValue == stack.nodeID && refused.error?["details"]?["command"] == "canvas.navigate")
        #expect(try stack.gateway.invoke(stack.nodeID, "system.info").ok, "background-safe commands still run")
        // No round trip happened: everything the node received until it came back to the front
        // was system.info, never canvas.navigate.
        stack.node.process.write(line: "fg")
        var received: [String] = []
        _ = try stack.node.process.waitForLine(timeout: 30) { line in
            if line.hasPrefix("invoke ") { received.append(line) }
            return line == "foreground true"
        }
        #expect(received == ["invoke system.info"], "\(received)")
        try stack.gateway.waitForEvent("foreground")
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://now.example"]).ok)
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
        #expect(
            big.error?["details"]?["nodeId"]?.stringValue == stack.nodeID && big.error?["details"]?["command"] == "canvas.snapshot",
            "every invoke error names the node and the command (§12.3)")
        let nobody = try stack.gateway.invoke("nobody", "canvas.snapshot")
        #expect(nobody.code == ErrorMessage.nodeNotFound && nobody.error?["details"]?["command"] == "canvas.snapshot")
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

/// The link itself, node calls, revocation under load, and the operator's CLI path.
@Suite(.serialized)
struct GatewayLinkTests {
    @Test func aRestartedGatewayIsRedialedWhileNodesStayConnected() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "device.echo"])
        let connectedAt = try stack.gateway.call("GET", "/nodes/\(stack.nodeID)").payload?["connectedAt"]
        #expect(connectedAt != nil)
        // An invoke in flight when the gateway dies is failed at once by the bridge (the node's
        // answer then finds nobody waiting).
        let inFlight = Background { try? stack.gateway.invoke(stack.nodeID, "device.echo", params: ["delayMs": 1000], timeoutMs: 30000) }
        try stack.node.waitFor("invoke device.echo")
        stack.gateway.kill()
        #expect(inFlight.value == nil, "the gateway died before any answer")
        try stack.bridge.waitForLog("gateway link down")
        try stack.bridge.waitForLog("dropped a result")

        let again = try SimulatedGateway(port: stack.gateway.port, tokenFile: stack.gateway.tokenFile)
        defer { again.stop() }
        try again.waitFor("bridge connected")
        #expect(try again.invoke(stack.nodeID, "device.echo", params: ["back": true]).payload?["back"] == true)
        let described = try again.call("GET", "/nodes/\(stack.nodeID)")
        #expect(described.payload?["connected"] == true)
        #expect(described.payload?["connectedAt"] == connectedAt, "the same session: the node never dropped")
        stack.node.stop()
        var nodeSaid: [String] = []
        while let line = try stack.node.process.nextLine(timeout: 30) { nodeSaid.append(line) }
        #expect(!nodeSaid.contains { $0.hasPrefix("disconnected") }, "\(nodeSaid)")
    }

    /// With the proof (the default) the gateway proves the token first: a bridge with another
    /// token hangs up on it, and neither side ever sent a token.
    @Test func aWrongTokenIsRefusedAndLogged() throws {
        let gateway = try SimulatedGateway()
        defer { gateway.stop() }
        let wrong = TemporaryDirectory("token")
        let file = writeTokenFile("not-the-token", in: wrong)
        let bridge = try BridgeDaemon(arguments: ["--gateway", "ws://127.0.0.1:\(gateway.port)", "--gateway-token-file", file])
        defer { bridge.stop() }
        // On the state itself: under heavy load the first attempt may fail otherwise (a timeout),
        // and later ones log at debug; runtime.json shows every attempt's reason.
        try bridge.waitForRuntime("the proof refused") { $0.gateway?.contains("proof of the token is wrong") == true }
    }

    /// A gateway that can only take a bearer token, by explicit choice on both sides.
    @Test func bearerTokensStillWorkWhenChosenAndAWrongOneIsRefused() throws {
        let gateway = try SimulatedGateway(arguments: ["--auth", "bearer"])
        defer { gateway.stop() }
        let bridge = try BridgeDaemon(arguments: gateway.bridgeArguments + ["--gateway-auth", "bearer"])
        defer { bridge.stop() }
        try gateway.waitFor("bridge connected")
        let directory = TemporaryDirectory("token")
        let wrong = try BridgeDaemon(arguments: [
            "--gateway", "ws://127.0.0.1:\(gateway.port)", "--gateway-token-file",
            writeTokenFile("not-the-token", in: directory), "--gateway-auth", "bearer",
        ])
        defer { wrong.stop() }
        try gateway.waitFor("refused a bridge with a wrong token")
        // The reason the bridge logs is usually the gateway's ("1008 bad token"); under load the
        // close can race the hello's write, so only the refusal itself is asserted.
        try wrong.waitForLog("gateway link down")
        let proofBridge = try BridgeDaemon(arguments: gateway.bridgeArguments)
        defer { proofBridge.stop() }
        #expect(
            try proofBridge.waitForLog("gateway link down").contains("did not answer the token challenge"),
            "a proof bridge does not fall back to sending the token")
    }

    @Test func aNodeMayCallAgentButNothingElse() throws {
        let stack = try RelayStack(config: #"{"limits": {"agentPerMinute": 1}}"#)
        defer { stack.stop() }
        stack.node.process.write(line: "agent hello from the phone")
        let call = try stack.gateway.waitFor("call agent ")
        let params = try JSONDecoder().decode(JSONValue.self, from: Data(call.dropFirst("call agent ".count).utf8))
        #expect(params["message"] == "hello from the phone")
        #expect(params["nodeId"]?.stringValue == stack.nodeID, "the bridge names the caller")
        #expect(params["idempotencyKey"]?.stringValue?.isEmpty == false)
        let answer = try stack.node.waitFor("agent")
        #expect(answer.hasPrefix("ok ") && answer.contains("\"accepted\":true"), "\(answer)")

        stack.node.process.write(line: "agent once more")
        #expect(try stack.node.waitFor("agent").hasPrefix("error RATE_LIMITED"), "one agent call a minute")
        stack.node.process.write(line: "call node.invoke")
        #expect(try stack.node.waitFor("call").hasPrefix("error FORBIDDEN"))
        // The node's next message is an event; had the forbidden call reached the gateway, the
        // gateway would have logged it before the event, which comes later on the same session.
        stack.node.process.write(line: "event battery.low")
        var seen: [String] = []
        let line = try stack.gateway.process.waitForLine(timeout: 30) {
            seen.append($0); return $0.contains("battery.low")
        }
        #expect(!seen.contains { $0.hasPrefix("call ") }, "\(seen)")
        let event = try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("event ".count).utf8))
        #expect(event["type"] == "event" && event["event"] == "battery.low" && event["nodeId"]?.stringValue == stack.nodeID)
    }

    @Test func revokingDuringABurstAnswersEveryInvokeAndDropsTheNode() throws {
        let stack = try RelayStack(config: #"{"limits": {"maxConcurrentInvokes": 64}}"#)
        defer { stack.stop() }
        try stack.cli(["nodes", "allow", stack.nodeID, "device.echo"])
        let burst = Background {
            inParallel(24) { i in try? stack.gateway.invoke(stack.nodeID, "device.echo", params: ["i": .number(Double(i)), "delayMs": 400]) }
        }
        try stack.node.waitFor("invoke device.echo")
        #expect(try stack.cli(["nodes", "revoke", stack.nodeID]).status == 0)
        let answers = burst.value
        #expect(answers.allSatisfy { $0 != nil }, "every invoke got an answer")
        let codes = Set(answers.compactMap { $0?.ok == true ? "OK" : $0?.code })
        #expect(codes.isSubset(of: ["OK", ErrorMessage.nodeNotConnected, ErrorMessage.nodeNotFound]), "\(codes)")
        #expect(codes.contains(ErrorMessage.nodeNotConnected) || codes.contains(ErrorMessage.nodeNotFound))
        try stack.gateway.waitForEvent("revoked")
        #expect(try stack.node.waitFor("fatal").contains("revoked"))
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo").code == ErrorMessage.nodeNotFound)
    }

    @Test func theOperatorInvokesThroughTheControlSocketUnderTheSameRules() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let socket = stack.bridge.state.url.appendingPathComponent("control.sock").path
        let mode = try FileManager.default.attributesOfItem(atPath: socket)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let out = stack.bridge.state.url.appendingPathComponent("snap.png").path
        let snap = try stack.cli(["nodes", "invoke", "--node", "phone", "--command", "canvas.snapshot", "--out", out, "--json"])
        #expect(snap.status == 0, "\(snap.stderr)")
        #expect(snap.stdout.contains("\"writtenTo\"") && !snap.stdout.contains("base64"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)).prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))

        let denied = try stack.cli(["nodes", "invoke", "--node", stack.nodeID, "--command", "system.info"])
        #expect(denied.status == 1 && denied.stderr.contains("FORBIDDEN"))
        try stack.backgroundNode()
        let background = try stack.cli(["nodes", "invoke", "--node", stack.nodeID, "--command", "canvas.hide", "--json"])
        #expect(background.status == 75 && background.stdout.contains(ErrorMessage.backgroundUnavailable))
        let described = try stack.cli(["nodes", "describe", "phone", "--json"])
        #expect(described.stdout.contains("\"foreground\" : false"))
        struct Check: Decodable { let name: String; let ok: Bool; let detail: String }
        let doctor = try JSONDecoder().decode([Check].self, from: Data(try stack.cli(["doctor", "--json"]).stdout.utf8))
        let link = try #require(doctor.first { $0.name == "gateway link" })
        #expect(link.ok && link.detail.hasPrefix("connected to ws://127.0.0.1:\(stack.gateway.port)"), "\(link)")

        stack.bridge.stop()
        let down = try stack.cli(["nodes", "invoke", "--node", stack.nodeID, "--command", "canvas.hide"])
        #expect(down.status == 69 && down.stderr.contains("not running"))
    }

    @Test func aBadConfigStopsTheDaemonAndNamesTheEntry() throws {
        let state = TemporaryDirectory("bridge")
        let config = state.url.appendingPathComponent("config.json")
        try Data(#"{"access": {"defaults": {"ios": {"add": ["canvas.*", "camera.snpa"]}}}}"#.utf8).write(to: config)
        let run = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0", "--config", config.path])
        #expect(run.status == 78)
        #expect(run.stderr.contains("access.defaults.ios.add[1]") && run.stderr.contains("camera.snpa"), "\(run.stderr)")
        let other = TemporaryDirectory("bridge")
        let remote = try CLI.run(["serve", "--state-dir", other.path, "--no-mdns", "--gateway", "ws://192.0.2.1:18789"])
        #expect(remote.status == 78)
        #expect(remote.stderr.contains("not a loopback address"), "\(remote.stderr)")
    }
}

extension GatewayEndToEndTests {
    /// SIGHUP reloads config.json and the token file: new limits apply to the next invoke, a bad
    /// file keeps the running settings (and the daemon), a new token redials the gateway.
    @Test func sighupReloadsTheConfigAndTheTokenAndKeepsRunningOnABadOne() throws {
        let stack = try RelayStack(config: #"{"limits": {"snapshotsPerMinute": 30}}"#)
        defer { stack.stop() }
        let config = stack.bridge.state.file("config.json")
        let small = ["width": 8, "height": 8] as JSONValue
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: small).ok)
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: small).ok)

        try Data(#"{"limits": {"snapshotsPerMinute": 1}}"#.utf8).write(to: config)
        stack.bridge.process.signal(SIGHUP)
        #expect(try stack.bridge.waitForLog("reloaded:").contains("limits changed"))
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: small).ok)
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: small).code == ErrorMessage.rateLimited, "the new limit")

        try Data(#"{"limits": {"snapshotsPerMinute": "many"}}"#.utf8).write(to: config)
        stack.bridge.process.signal(SIGHUP)
        #expect(try stack.bridge.waitForLog("reload failed").contains("limits.snapshotsPerMinute"))
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: small).code == ErrorMessage.rateLimited, "the old settings hold")

        try Data("rotated-token\n".utf8).write(to: URL(fileURLWithPath: stack.gateway.tokenFile))
        try Data(#"{"limits": {"snapshotsPerMinute": 1}}"#.utf8).write(to: config)
        stack.bridge.process.signal(SIGHUP)
        #expect(try stack.bridge.waitForLog("reloaded:").contains("gateway token"))
        try stack.gateway.waitFor("bridge disconnected")  // it redials with the new token
        #expect(stack.bridge.process.process.isRunning)
    }
}

extension GatewayEndToEndTests {
    /// A node that reconnects replaces its old session; it never left, so the gateway hears a new
    /// `connected` and no `disconnected`.
    @Test func aReplacedSessionIsNotADisconnect() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        let second = try SimulatedNode(state: stack.node.state, port: stack.bridge.port)
        defer { second.stop() }
        try second.waitFor("connected")
        var seen: [String] = []
        while let line = try stack.gateway.process.nextLine() {
            guard line.hasPrefix("event ") else { continue }
            if line.contains("\"type\":\"disconnected\"") { seen.append("disconnected") }
            if line.contains("\"type\":\"connected\"") { seen.append("connected"); break }
        }
        #expect(seen == ["connected"], "\(seen)")
        #expect(try stack.gateway.call("GET", "/nodes/\(stack.nodeID)").payload?["connected"] == true)
    }
}

/// `node.invoke` with `hold` through the real daemon (issue 25): a command for a backgrounded
/// node's foreground waits at the bridge and runs when the node comes back to the front.
@Suite
struct HoldEndToEndTests {
    @Test func aHeldInvokeRunsWhenTheNodeComesBackToTheFront() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let call = HeldCall(stack)
        try stack.bridge.waitForLog("invoke held")
        stack.node.process.write(line: "fg")
        try stack.node.waitFor("invoke")
        let result = try #require(call.wait())
        #expect(result.ok, "\(result)")
        try stack.bridge.waitForLog("held invoke delivered")
    }

    @Test func aHeldInvokeForANodeThatIsAwayRunsWhenItReconnects() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        stack.node.stop()
        try stack.gateway.waitForEvent("disconnected")
        let call = HeldCall(stack, command: "canvas.present")
        try stack.bridge.waitForLog("invoke held")
        let back = try SimulatedNode(state: stack.node.state, port: stack.bridge.port, arguments: ["--name", "phone"])
        defer { back.stop() }
        #expect(try back.waitFor("invoke") == "canvas.present")
        #expect(call.wait()?.ok == true)
    }

    @Test func aHeldInvokeThatExpiresSaysItWasHeldAndHowLong() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let answer = try #require(HeldCall(stack, holdMs: 1000).wait())
        #expect(answer.code == "NODE_BACKGROUND_UNAVAILABLE" && answer.error?["retryable"] == true, "\(answer)")
        #expect(answer.error?["details"]?["held"] == true)
        guard case let .number(waited)? = answer.error?["details"]?["waitedMs"] else { Issue.record("\(answer)"); return }
        #expect(waited >= 1000)
    }

    @Test func pastTheBoundTheNewestIsRefusedAndTheHeldOneStillRuns() throws {
        let stack = try RelayStack(config: #"{"limits": {"heldPerNode": 1}}"#)
        defer { stack.stop() }
        try stack.backgroundNode()
        let first = HeldCall(stack)
        try stack.bridge.waitForLog("invoke held")
        let second = try #require(HeldCall(stack, command: "canvas.present").wait())
        #expect(second.code == "HOLD_LIMIT" && second.error?["retryable"] == true, "\(second)")
        stack.node.process.write(line: "fg")
        #expect(first.wait()?.ok == true)
    }

    @Test func anIdempotentRetryJoinsTheHeldInvokeAndItRunsOnce() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let key = "retry-\(UUID().uuidString)"
        let first = HeldCall(stack, key: key)
        try stack.bridge.waitForLog("invoke held")
        let retry = HeldCall(stack, key: key)
        try stack.bridge.waitForLog("idempotent retry joined")
        stack.node.process.write(line: "fg")
        #expect(first.wait()?.ok == true && retry.wait()?.ok == true)
        #expect(stack.node.process.output.filter { $0 == "invoke canvas.hide" }.count == 1, "run once: \(stack.node.process.output)")
        #expect(stack.bridge.log.components(separatedBy: "invoke held").count - 1 == 1)
    }

    @Test func aRevokedNodesHeldInvokesFailAtOnce() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let call = HeldCall(stack, holdMs: 300_000)
        try stack.bridge.waitForLog("invoke held")
        #expect(try stack.cli(["nodes", "revoke", stack.nodeID]).status == 0)
        #expect(call.wait()?.code == "NODE_NOT_FOUND")
    }
}

/// `lanbridge nodes invoke --hold` (issue 25): the operator's invoke waits for the node too, and
/// an operator who gives up takes the held invoke along.
extension HoldEndToEndTests {
    func heldFromTheCLI(_ stack: RelayStack, _ command: String) throws -> ChildProcess {
        try launch("lanbridge", ["nodes", "invoke", "--node", stack.nodeID, "--command", command, "--hold", "30s", "--state-dir", stack.bridge.state.path])
    }

    @Test func theCLIHoldsForTheNodeToo() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let cli = try heldFromTheCLI(stack, "canvas.hide")
        defer { cli.killIfRunning() }
        try stack.bridge.waitForLog("invoke held")
        stack.node.process.write(line: "fg")
        #expect(cli.wait() == 0, "\(cli.standardError)")
    }

    @Test func anOperatorWhoGivesUpTakesTheHeldInvokeAlong() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        try stack.backgroundNode()
        let cli = try heldFromTheCLI(stack, "canvas.hide")
        try stack.bridge.waitForLog("invoke held")
        cli.signal(SIGKILL)
        cli.wait()
        try stack.bridge.waitForLog("held invoke dropped: its asker left")
        stack.node.process.write(line: "fg")
        try stack.gateway.waitForEvent("foreground")
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.present").ok)
        #expect(try stack.node.waitFor("invoke") == "canvas.present", "the dropped canvas.hide never ran")
    }
}
