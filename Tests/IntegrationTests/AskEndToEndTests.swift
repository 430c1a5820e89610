import Foundation
import LanbridgeProtocol
import LanbridgeStores
import NIOConcurrencyHelpers
import Testing
import TestSupport

/// Issue 52 §1: an ask rule holds an invoke until the operator answers it from the CLI; each
/// answer, each way it can end, with real processes.
@Suite(.serialized)
struct AskEndToEndTests {
    /// A `node.invoke` through gateway-sim on a thread of its own: it waits for the operator.
    final class AskedCall: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let answer = NIOLockedValueBox<SimulatedGateway.Answer?>(nil)

        init(_ stack: RelayStack, command: String = "device.echo", params: JSONValue = ["note": "a secret value"], key: String? = nil) {
            var body: [String: JSONValue] = ["nodeId": .string(stack.nodeID), "command": .string(command), "params": params]
            if let key { body["idempotencyKey"] = .string(key) }
            Thread.detachNewThread { [self, body] in
                answer.withLockedValue { $0 = try? stack.gateway.call("POST", "/invoke", body: .object(body)) }
                done.signal()
            }
        }

        func wait() -> SimulatedGateway.Answer? {
            guard done.wait(timeout: .now() + 60) == .success else { return nil }
            return answer.withLockedValue { $0 }
        }
    }

    struct Pending: Decodable { let id, nodeId, name, command, askRule, asker, params: String }

    /// Waits for the daemon to say an invoke waits, then reads what waits.
    func pending(_ stack: RelayStack, count: Int = 1) throws -> [Pending] {
        for _ in 0..<count { try stack.bridge.waitForLog("invoke waits for the operator") }
        let listed = try stack.cli(["invokes", "pending", "--json"])
        #expect(listed.status == 0, "\(listed)")
        return try JSONDecoder().decode([Pending].self, from: Data(listed.stdout.utf8))
    }

    func pendingNow(_ stack: RelayStack) throws -> [Pending] {
        try JSONDecoder().decode([Pending].self, from: Data(stack.cli(["invokes", "pending", "--json"]).stdout.utf8))
    }

    func reason(_ answer: SimulatedGateway.Answer?) -> String? { answer?.error?["details"]?["reason"]?.stringValue }

    @Test func approvedOnceItRunsAndTheNextOneAsksAgain() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let call = AskedCall(stack)
        let waiting = try pending(stack)
        #expect(waiting.count == 1 && waiting.first?.command == "device.echo" && waiting.first?.askRule == "device.echo" && waiting.first?.asker == "gateway")
        #expect(waiting.first?.params == "{note: text (14)}", "the params' shape, never their values")
        let table = try stack.cli(["invokes", "pending"])
        #expect(table.stdout.contains("device.echo") && !table.stdout.contains("a secret value"), "\(table)")
        let approve = try stack.cli(["invokes", "approve", waiting[0].id])
        #expect(approve.status == 0, "\(approve)")
        let answer = call.wait()
        #expect(answer?.ok == true && answer?.payload?["note"] == "a secret value", "\(String(describing: answer))")
        // Once: the next one asks again.
        let second = AskedCall(stack)
        let again = try pending(stack)
        #expect(again.count == 1 && again[0].id != waiting[0].id)
        #expect(try stack.cli(["invokes", "deny", again[0].id]).status == 0)
        _ = second.wait()
        let audit = try stack.bridge.store.audit.entries().filter { $0.event.hasPrefix("invoke.ask-") }
        #expect(audit.map(\.event) == ["invoke.ask-approved", "invoke.ask-denied"], "\(audit)")
        #expect(audit.allSatisfy { $0.actor == "uid:\(getuid())" && $0.detail?.contains("device.echo (ask rule device.echo, asked by gateway)") == true })
        let activity = try stack.cli(["activity", "--json"])
        #expect(activity.stdout.contains("\"ok\"") && activity.stdout.contains("ASKED_DENIED"), "\(activity)")
    }

    @Test func deniedTheGatewayHearsAskedDeniedAndTheIDIsSpent() throws {
        let stack = try RelayStack(bridgeArguments: ["--metrics-listen", "127.0.0.1:0"])
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.*"]).status == 0)
        let call = AskedCall(stack)
        let id = try pending(stack)[0].id
        #expect(try stack.cli(["invokes", "deny", id]).status == 0)
        let answer = call.wait()
        #expect(answer?.code == ErrorMessage.forbidden && reason(answer) == ErrorMessage.askedDenied, "\(String(describing: answer))")
        #expect(answer?.error?["retryable"] == false && answer?.error?["details"]?["askRule"] == "device.*")
        // Answered already: a clear refusal, and nothing changes.
        let twice = try stack.cli(["invokes", "approve", id])
        #expect(twice.status == 1 && twice.stderr.contains("no invoke waits"), "\(twice)")
        let unknown = try stack.cli(["invokes", "deny", "\u{1b}[2Jnope"])
        #expect(unknown.status == 1 && !unknown.stderr.contains("\u{1b}"), "escaped: \(unknown)")
        // Counted by its reason, a bounded label (it was NODE_ERROR before it had a name).
        let metrics = try HTTPClient.request("GET", port: try #require(stack.bridge.metricsPort), path: "/metrics")
        #expect(String(decoding: metrics.body, as: UTF8.self).contains(#"outcome="ASKED_DENIED""#))
    }

    @Test func unansweredItTimesOut() throws {
        let stack = try RelayStack(config: #"{"limits": {"askTimeoutMs": 1000}}"#)
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let answer = AskedCall(stack).wait()
        #expect(answer?.code == ErrorMessage.forbidden && reason(answer) == ErrorMessage.askTimeout, "\(String(describing: answer))")
        #expect(try pendingNow(stack).isEmpty)
    }

    @Test func approvedForAWhileTheSameCommandRunsWithoutAsking() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let call = AskedCall(stack)
        #expect(try stack.cli(["invokes", "approve", try pending(stack)[0].id, "--for", "10m"]).status == 0)
        #expect(call.wait()?.ok == true)
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo", params: ["n": 2]).ok, "within the 10 minutes: no question")
        #expect(try stack.bridge.store.audit.entries().contains { $0.detail?.contains("approved for 10m") == true })
    }

    @Test func approvedAlwaysTheAskRuleBecomesAnAllowRule() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let call = AskedCall(stack)
        let approve = try stack.cli(["invokes", "approve", try pending(stack)[0].id, "--always"])
        #expect(approve.status == 0, "\(approve)")
        #expect(call.wait()?.ok == true)
        let node = try #require(try stack.bridge.store.read().paired.nodes.first)
        #expect(node.access.ask.isEmpty && node.access.allow.contains("device.echo"), "\(node.access)")
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo").ok)
        let audit = try stack.bridge.store.audit.entries()
        #expect(audit.contains { $0.event == "node.access-changed" } && audit.contains { $0.detail?.hasSuffix("approved always") == true })
    }

    @Test func aCancelOrARevokeEndsAnAskedInvoke() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let cancelled = AskedCall(stack, key: "ask-1")
        _ = try pending(stack)
        let cancel = try stack.gateway.call("POST", "/cancel", body: ["nodeId": .string(stack.nodeID), "idempotencyKey": "ask-1"])
        #expect(cancel.ok && cancel.payload?["cancelled"] == true)
        #expect(cancelled.wait()?.code == ErrorMessage.cancelled)
        let revoked = AskedCall(stack)
        _ = try pending(stack)
        #expect(try stack.cli(["nodes", "revoke", stack.nodeID]).status == 0)
        #expect(revoked.wait()?.code == ErrorMessage.nodeNotFound)
        #expect(try pendingNow(stack).isEmpty)
    }

    /// A flood of asks cannot grow memory: past the bound each is refused at once, retryable.
    @Test func pastTheBoundAnAskIsRefusedAtOnce() throws {
        let stack = try RelayStack(config: #"{"limits": {"askPerNode": 2}}"#)
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let calls = [AskedCall(stack), AskedCall(stack)]
        #expect(try pending(stack, count: 2).count == 2)
        let third = try stack.gateway.invoke(stack.nodeID, "device.echo")
        #expect(third.code == ErrorMessage.holdLimit && third.error?["details"]?["reason"] == .string(ErrorMessage.askLimit) && third.error?["retryable"] == true)
        for ask in try pending(stack, count: 0) { #expect(try stack.cli(["invokes", "deny", ask.id]).status == 0) }
        for call in calls { #expect(reason(call.wait()) == ErrorMessage.askedDenied) }
    }

    /// Deny wins over ask; ask wins over allow.
    @Test func denyWinsOverAskAndAskOverAllow() throws {
        let stack = try RelayStack(config: #"{"access": {"defaults": {"*": {"add": ["device.echo"]}}}}"#)
        defer { stack.stop() }
        #expect(try stack.gateway.invoke(stack.nodeID, "device.echo").ok, "allowed")
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.*"]).status == 0)
        let asked = AskedCall(stack)
        let id = try pending(stack)[0].id
        #expect(try stack.cli(["invokes", "deny", id]).status == 0)
        #expect(reason(asked.wait()) == ErrorMessage.askedDenied, "ask won over allow")
        #expect(try stack.cli(["nodes", "deny", stack.nodeID, "device.echo"]).status == 0)
        let denied = try stack.gateway.invoke(stack.nodeID, "device.echo")
        #expect(denied.code == ErrorMessage.forbidden && denied.error?["details"]?["denyRule"] == "device.echo", "deny won over ask, without asking")
    }

    /// §2: approved with --ask-sensitive, the camera is usable only after asking; an invite can
    /// carry ask rules too.
    @Test func approvedWithAskSensitiveTheCameraAsksFirst() throws {
        let gateway = try SimulatedGateway()
        let state = TemporaryDirectory("bridge")
        try Data(#"{"limits": {"askTimeoutMs": 1000}}"#.utf8).write(to: state.file("config.json"))
        let bridge = try BridgeDaemon(state: state, arguments: gateway.bridgeArguments)
        try gateway.waitFor("bridge connected")
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "camera phone", "--camera"])
        let id = try node.waitFor("node")
        let code = try node.waitFor("code").split(separator: " ")
        let approval = try CLI.run(["nodes", "approve", String(code[2]), "--code", String(code[0]), "--ask-sensitive", "--state-dir", bridge.state.path])
        #expect(approval.status == 0 && approval.stdout.contains("Asked each time: camera.snap"), "\(approval)")
        try node.waitFor("connected")
        #expect(try bridge.store.read().paired.nodes.first?.access.ask == ["camera.snap"])
        // Nobody answers here: after askTimeoutMs (1 s) the gateway hears ASK_TIMEOUT, not a photo.
        let answer = try gateway.invoke(id, "camera.snap")
        #expect(reason(answer) == ErrorMessage.askTimeout, "\(answer)")
        #expect(bridge.logContains("invoke waits for the operator"))

        let invite = try CLI.run([
            "invite", "create", "--name", "asked tablet", "--ask", "device.echo", "--host", "127.0.0.1", "--port", String(bridge.port), "--no-qr", "--json", "--state-dir",
            bridge.state.path,
        ])
        #expect(invite.status == 0, "\(invite)")
        let uri = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(invite.stdout.utf8))["uri"]?.stringValue)
        let tablet = try SimulatedNode(port: bridge.port, arguments: ["--name", "asked tablet", "--invite", uri])
        try tablet.waitFor("connected")
        #expect(try bridge.store.read().paired.nodes.first { $0.details.displayName == "asked tablet" }?.access.ask == ["device.echo"])
    }

    @Test func withoutADaemonNothingWaits() throws {
        let state = TemporaryDirectory("bridge")
        let run = try CLI.run(["invokes", "pending", "--state-dir", state.path])
        #expect(run.status == 69 && run.stderr.contains("not running"), "\(run)")
    }

    /// §4: the notify hook runs when an invoke starts waiting; its document holds the prompt (the
    /// params' shape, never their values) and a one-time console link for the configured uid, which
    /// lands on the prompt once and never again, and whose token never reaches the log.
    @Test func theNotifyHookHearsOfTheAskWithAOneTimeConsoleLink() throws {
        let hooks = TemporaryDirectory("notify")
        let script = hooks.url.appendingPathComponent("notify")
        let out = hooks.url.appendingPathComponent("document.json")
        // Prints the link, as a careless hook might: the log must show it without its token.
        try Data("#!/bin/sh\ncat > \"$1\"\nsed -n 's/.*\\(login?token=[^\"]*\\).*/\\1/p' \"$1\"\n".utf8).write(to: script)
        chmod(script.path, 0o755)
        let notify: JSONValue = ["exec": .string(script.path), "args": [.string(out.path)], "consoleUid": .number(Double(getuid()))]
        let stack = try RelayStack(
            config: String(decoding: (["notify": notify] as JSONValue).serialized, as: UTF8.self), bridgeArguments: ["--ui-listen", "127.0.0.1:0"])
        defer { stack.stop() }
        #expect(try stack.cli(["nodes", "ask", stack.nodeID, "device.echo"]).status == 0)
        let call = AskedCall(stack)
        let waiting = try pending(stack)
        let ran = try stack.bridge.waitForLog("notify hook ran")
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: out))
        #expect(document["id"]?.stringValue == waiting.first?.id && document["command"] == "device.echo" && document["name"] == "phone", "\(document)")
        #expect(document["params"] == "{note: text (14)}" && document["askRule"] == "device.echo" && document["asker"] == "gateway", "\(document)")
        #expect(document["approve"]?.stringValue == "lanbridge invokes approve \(waiting[0].id)")
        #expect(!String(decoding: try Data(contentsOf: out), as: UTF8.self).contains("a secret value"), "the params' values never reach the hook")
        let link = try #require(document["consoleLink"]?.stringValue)
        let console = try #require(stack.bridge.consoleURL)
        #expect(link.hasPrefix(console + "/login?token="), "\(link)")
        let token = String(link.split(separator: "=")[1].prefix { $0 != "&" })
        #expect(ran.contains("[token]") && !stack.bridge.log.contains(token), "the hook's output is logged without the token: \(ran)")

        // The link opens a session on the prompt, once.
        let port = try #require(Int(console.split(separator: ":").last ?? ""))
        let path = String(link.dropFirst(console.count))
        let first = try HTTPClient.exchange("GET", port: port, path: path)
        #expect(first.status == 303 && first.headers["location"] == "/#ask-\(waiting[0].id)", "\(first.status) \(first.headers)")
        #expect(first.headers["set-cookie"]?.hasPrefix("lanbridge_session=") == true)
        #expect(try HTTPClient.exchange("GET", port: port, path: path).status == 403, "a used link opens nothing")

        #expect(try stack.cli(["invokes", "deny", waiting[0].id]).status == 0)
        #expect(reason(call.wait()) == "ASKED_DENIED")
    }

    /// §1, both modes: OpenClaw's gateway invokes a node's own socket there; an ask rule holds it
    /// for the operator all the same (asked by "openclaw"), and the answer reaches that gateway:
    /// approved it runs, denied it hears FORBIDDEN with ASKED_DENIED.
    @Test(.enabled(if: Python.hasModule("websockets") && Python.hasModule("cryptography"), "needs Python's websockets and cryptography"))
    func anOpenClawGatewaysInvokeIsAskedToo() throws {
        let stack = try OpenClawEndToEndTests.Stack()
        #expect(try CLI.run(["nodes", "ask", stack.nodeID, "system.info", "--state-dir", stack.bridge.state.path]).status == 0)
        func asked() throws -> (id: String, ask: String) {
            stack.gateway.command("invoke \(stack.device) device.info null 90000")
            let id = try stack.gateway.waitFor("invoking")[0]
            try stack.bridge.waitForLog("invoke waits for the operator")
            let listed = try CLI.run(["invokes", "pending", "--json", "--state-dir", stack.bridge.state.path])
            let waiting = try JSONDecoder().decode([Pending].self, from: Data(listed.stdout.utf8))
            #expect(waiting.count == 1 && waiting.first?.command == "system.info" && waiting.first?.asker == "openclaw", "\(listed)")
            return (id, waiting.first?.id ?? "")
        }
        func result(_ id: String) throws -> JSONValue {
            let line = try stack.gateway.process.waitForLine(timeout: 30) { $0.hasPrefix("result \(id) ") }
            return try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("result \(id) ".count).utf8))
        }
        let first = try asked()
        #expect(try CLI.run(["invokes", "approve", first.ask, "--state-dir", stack.bridge.state.path]).status == 0)
        let approved = try result(first.id)
        #expect(approved["ok"] == true, "\(approved)")
        let second = try asked()
        #expect(try CLI.run(["invokes", "deny", second.ask, "--state-dir", stack.bridge.state.path]).status == 0)
        let denied = try result(second.id)
        #expect(denied["ok"] == false && "\(denied)".contains("ASKED_DENIED"), "\(denied)")
    }
}
