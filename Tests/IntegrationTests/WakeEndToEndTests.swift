import Foundation
import LanbridgeProtocol
import NIOConcurrencyHelpers
import Testing
import TestSupport

/// The wake hook (issue 25), with the real daemon, gateway-sim and node-sim: an invoke held for a
/// backgrounded phone runs the operator's hook, whose push reaches a local HTTP server standing in
/// for ntfy or APNs; the hook sees its document and nothing else of the daemon's.
@Suite(.serialized)
struct WakeEndToEndTests {
    /// http_sink.py and its port.
    static func sink(_ arguments: [String] = []) throws -> (ChildProcess, Int) {
        let sink = try ChildProcess(URL(fileURLWithPath: Python.executable), [Repository.url("Tests/IntegrationTests/python/http_sink.py").path] + arguments)
        let port = Int(try sink.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count)) ?? 0
        return (sink, port)
    }

    static func config(exec: String, args: [String], timeoutMs: Int = 10000) throws -> String {
        let wake: JSONValue = ["exec": .string(exec), "args": .array(args.map(JSONValue.string)), "timeoutMs": .number(Double(timeoutMs))]
        return String(decoding: (["wake": wake] as JSONValue).serialized, as: UTF8.self)
    }

    static func backgrounded(_ stack: RelayStack, push: String) throws {
        stack.node.process.write(line: "push \(push)")
        #expect(try stack.node.waitFor("push").hasPrefix("ok"))
        try stack.backgroundNode()
    }

    /// A `key=value` field of a log line.
    static func field(_ name: String, in line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix("\(name)=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    @Test func theNtfyHookWakesABackgroundedPhoneAndTheHeldInvokeRunsWhenItIsBack() throws {
        let (sink, port) = try Self.sink()
        defer { sink.killIfRunning() }
        let stack = try RelayStack(config: try Self.config(exec: Repository.url("examples/wake/ntfy").path, args: ["http://127.0.0.1:\(port)"]))
        defer { stack.stop() }
        try Self.backgrounded(stack, push: "ntfy lanbridge-test-topic")

        let asked = Date()
        let call = HeldCall(stack)
        let request = try JSONDecoder().decode(JSONValue.self, from: Data(try sink.waitForLine(timeout: 30) { $0.hasPrefix("{") }.utf8))
        let reached = Date().timeIntervalSince(asked)
        #expect(request["path"] == "/lanbridge-test-topic" && request["method"] == "POST")
        #expect(request["body"]?.stringValue?.contains("canvas.hide is waiting for phone") == true, "\(request)")
        let ran = try stack.bridge.waitForLog("wake hook ran")
        #expect(ran.contains("ntfy: 200") && ran.contains("provider=ntfy"), "\(ran)")
        let started = stack.bridge.log.split(separator: "\n").first { $0.contains("wake hook started") }.map(String.init) ?? ""
        print("wake: hold to hook start \(Self.field("latencyMs", in: started) ?? "?") ms, hold to the push service's request \(Int(reached * 1000)) ms (ntfy hook, local server)")

        stack.node.process.write(line: "fg")
        try stack.node.waitFor("invoke")
        #expect(call.wait()?.ok == true)
    }

    @Test func theAPNsHookSignsAProviderJWTThatVerifiesAndReusesIt() throws {
        let keys = TemporaryDirectory("apns")
        let key = keys.url.appendingPathComponent("AuthKey_ABC123DEFG.p8").path
        #expect(ChildProcess.exitStatus("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]) == 0)
        let (sink, port) = try Self.sink(["--es256-key", key])
        defer { sink.killIfRunning() }
        let cache = keys.url.appendingPathComponent("jwt").path
        let args = ["--key", key, "--key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ", "--url", "http://127.0.0.1:\(port)", "--cache", cache]
        let hook = Repository.url("examples/wake/apns").path
        let stack = try RelayStack(config: try Self.config(exec: hook, args: args))
        defer { stack.stop() }
        let token = PushEndToEndTests.token
        try Self.backgrounded(stack, push: "apns \(token) production com.example.companion")

        let call = HeldCall(stack)
        let line = try sink.waitForLine(timeout: 30) { $0.hasPrefix("{") }
        let request = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
        #expect(request["path"] == .string("/3/device/\(token)"))
        #expect(request["jwt"] == "valid", "\(request)")
        #expect(request["jwtHeader"]?["alg"] == "ES256" && request["jwtHeader"]?["kid"] == "ABC123DEFG" && request["jwtClaims"]?["iss"] == "DEF123GHIJ")
        #expect(
            request["headers"]?["apns-topic"] == "com.example.companion" && request["headers"]?["apns-push-type"] == "background"
                && request["headers"]?["apns-priority"] == "5")
        let body = try JSONDecoder().decode(JSONValue.self, from: Data((request["body"]?.stringValue ?? "").utf8))
        #expect(body["aps"]?["content-available"] == 1 && body["lanbridge"]?["command"] == "canvas.hide")
        let ran = try stack.bridge.waitForLog("wake hook ran")
        #expect(ran.contains("apns: 200"), "\(ran)")
        #expect(!stack.bridge.log.contains(token), "the device token is never logged")

        // Run again by hand within the hour: the cached JWT is reused (Apple refuses new ones more
        // often than every 20 minutes), and an alert is asked for.
        let again = try ChildProcess(URL(fileURLWithPath: hook), args + ["--alert"], standardInput: true)
        again.write(
            line: #"{"version":1,"nodeId":"x","displayName":"phone","platform":"ios","command":"canvas.hide","why":"NODE_NOT_CONNECTED","#
                + #""holdMs":1000,"provider":"apns","token":"\#(token)","environment":"production","topic":"com.example.companion"}"#)
        again.closeStandardInput()
        let printed = try again.nextLine()
        #expect(printed == "apns: 200", "\(again.standardError)")
        let second = try JSONDecoder().decode(JSONValue.self, from: Data(try sink.waitForLine(timeout: 30) { $0.hasPrefix("{") }.utf8))
        #expect(second["headers"]?["authorization"] == request["headers"]?["authorization"] && second["headers"]?["apns-push-type"] == "alert")
        stack.node.process.write(line: "fg")
        #expect(call.wait()?.ok == true)
    }

    /// The hook gets its document on stdin and nothing else: an allow-listed environment (not the
    /// gateway token the daemon was given in its own), no inherited descriptor; past its time it
    /// is killed with what it started.
    @Test func theHookSeesOnlyItsDocumentAndIsKilledWithItsChildrenWhenLate() throws {
        let dir = TemporaryDirectory("hook")
        let record = dir.url.appendingPathComponent("record.json").path
        let hook = dir.url.appendingPathComponent("hook").path
        try Data(
            """
            #!/usr/bin/python3
            import json, os, subprocess, sys
            doc = json.load(sys.stdin)
            blocked = [l.split()[1] for l in open("/proc/self/status") if l.startswith("SigBlk:")][0]
            fds = {f: os.readlink("/proc/self/fd/" + f) for f in os.listdir("/proc/self/fd") if os.path.exists("/proc/self/fd/" + f)}
            child = subprocess.Popen(["sleep", "60"])
            with open(\(String(decoding: JSONValue.string(record).serialized, as: UTF8.self)), "w") as f:
                json.dump({"doc": doc, "env": dict(os.environ), "fds": fds, "blocked": blocked, "pid": os.getpid(), "pgid": os.getpgid(0), "sleeper": child.pid}, f)
            print("recorded; now too slow", flush=True)
            child.wait()

            """.utf8
        ).write(to: URL(fileURLWithPath: hook))
        #expect(chmod(hook, 0o755) == 0)
        let gatewayToken = "wake-test-token-\(UUID().uuidString)"
        let stack = try RelayStack(
            config: try Self.config(exec: hook, args: [], timeoutMs: 1000), bridgeEnvironment: ["LANBRIDGE_GATEWAY_TOKEN": gatewayToken],
            gatewayToken: gatewayToken)
        defer { stack.stop() }
        try Self.backgrounded(stack, push: "apns \(PushEndToEndTests.token) sandbox com.example.companion")

        let call = HeldCall(stack, holdMs: 1500)
        let late = try stack.bridge.waitForLog("wake hook timed out")
        #expect(late.contains("recorded; now too slow"), "its first line is logged: \(late)")
        let seen = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: URL(fileURLWithPath: record)))
        let doc = try #require(seen["doc"])
        #expect(
            doc == [
                "version": 1, "nodeId": .string(stack.nodeID), "displayName": "phone", "platform": "ios", "command": "canvas.hide",
                "why": .string(ErrorMessage.backgroundUnavailable), "holdMs": 1500, "provider": "apns", "token": .string(PushEndToEndTests.token),
                "environment": "sandbox", "topic": "com.example.companion",
            ], "\(doc)")
        guard case let .object(environment)? = seen["env"], case let .object(fds)? = seen["fds"] else { Issue.record("\(seen)"); return }
        #expect(Set(environment.keys).isSubset(of: ["PATH", "LANG", "LC_ALL", "TZ", "HOME"]), "\(environment.keys)")
        #expect(!String(decoding: (seen as JSONValue).serialized, as: UTF8.self).contains(gatewayToken), "the gateway token reaches no hook")
        #expect(Set(fds.keys) == ["0", "1", "2"], "stdin, stdout and stderr only: \(fds)")
        #expect(seen["blocked"] == "0000000000000000", "no signal blocked (the daemon's mask is not the hook's)")
        #expect(seen["pgid"] == seen["pid"], "its own process group, so a late one is killed with its children")
        // The group kill takes the child too. Usually it is gone by the log line (its output ends
        // when every holder of the pipe is gone); under heavy load the daemon may stop reading at
        // its output deadline first, so this waits on the process itself, bounded.
        guard case let .number(sleeper)? = seen["sleeper"] else { Issue.record("\(seen)"); return }
        #expect(Self.gone(pid_t(sleeper), within: 10), "the hook's child went with it")
        #expect(call.wait()?.error?["details"]?["held"] == true)
    }

    /// A hook that leaves a child in a session of its own holding its output: the group kill
    /// cannot reach it, and the wake thread stops waiting for the output a second past the time
    /// limit instead of for as long as that child lives.
    @Test func aChildThatEscapesTheGroupDoesNotHoldTheHookRunForEver() throws {
        let dir = TemporaryDirectory("hook")
        let escaped = dir.file("escaped.pid").path, hook = dir.file("hook").path
        try Data("#!/bin/sh\nsetsid sleep 120 &\necho $! > \(escaped)\necho escaped\n".utf8).write(to: URL(fileURLWithPath: hook))
        #expect(chmod(hook, 0o755) == 0)
        defer {  // the escaped sleep is this test's: stopped by its PID
            if let text = try? String(contentsOfFile: escaped, encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(pid, SIGKILL) }
        }
        let stack = try RelayStack(config: try Self.config(exec: hook, args: [], timeoutMs: 300))
        defer { stack.stop() }
        try Self.backgrounded(stack, push: "ntfy some-topic")
        let call = HeldCall(stack)
        let late = try stack.bridge.waitForLog("wake hook timed out")
        #expect(late.contains("output=escaped"), "\(late)")
        stack.node.process.write(line: "fg")
        #expect(call.wait()?.ok == true)
    }

    @Test func serveRefusesAHookThatCannotRun() throws {
        let state = TemporaryDirectory("bridge")
        let config = state.url.appendingPathComponent("config.json")
        try Data(try Self.config(exec: state.url.path, args: []).utf8).write(to: config)
        let refused = try CLI.run(["serve", "--state-dir", state.path, "--config", config.path, "--no-mdns", "--no-ui", "--no-gateway", "--bind", "loopback", "--port", "0"])
        #expect(refused.status == 78 && refused.stderr.contains("wake.exec \(state.url.path) is not an executable file"), "\(refused)")
    }

    /// Alive and not a zombie.
    /// Whether `pid` is gone (or a zombie) within `seconds`: polled, as a process that is not our
    /// child cannot be waited for.
    static func gone(_ pid: pid_t, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning(pid) {
            guard Date() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    static func isRunning(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        return !(stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true)
    }
}
