import Foundation
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// A simulated OpenClaw gateway (python/openclaw_gateway.py, written from the protocol study, not
/// from lanbridge), a real `lanbridge serve --gateway-protocol openclaw` and a real node-sim.
final class OpenClawGatewaySim: @unchecked Sendable {
    static let script = Repository.url("Tests/IntegrationTests/python/openclaw_gateway.py").path
    let process: ChildProcess
    let port: Int
    let token = "oc-shared-\(UUID().uuidString)"
    let directory = TemporaryDirectory("openclaw")
    let tokenFile: String

    let arguments: [String]

    init(arguments: [String] = ["--tick-ms", "1000"]) throws {
        self.arguments = arguments
        tokenFile = writeTokenFile(token, in: directory)
        process = try ChildProcess(URL(fileURLWithPath: Python.executable), [Self.script, token] + arguments, standardInput: true)
        port = Int(try process.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count))!
    }

    /// The sim's own arguments say how it listens: loopback ws://, `--tls CERT KEY`, or `--unix PATH`.
    var bridgeArguments: [String] {
        let gateway: [String] =
            if let unix = arguments.firstIndex(of: "--unix") { ["--gateway", "unix:\(arguments[unix + 1])"] } else if let tls = arguments.firstIndex(of: "--tls") {
                ["--gateway", "wss://localhost:\(port)", "--gateway-ca-file", arguments[tls + 1]]
            } else { ["--gateway", "ws://127.0.0.1:\(port)"] }
        return gateway + ["--gateway-token-file", tokenFile, "--gateway-protocol", "openclaw"]
    }

    /// The next line starting with `prefix`, split into words (the prefix dropped).
    @discardableResult
    func waitFor(_ prefix: String) throws -> [String] {
        do {
            return try process.waitForLine(timeout: 30) { $0.hasPrefix(prefix + " ") }.dropFirst(prefix.count + 1).split(separator: " ").map(String.init)
        } catch {
            throw Failure(description: "waiting for \"\(prefix)\" from the gateway sim: \(error); its stderr: \(process.standardError)")
        }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Invokes through the gateway as an operator would; returns the node.invoke.result params (or the gateway's error).
    /// `force`: as a gateway that ignores its own command policy would.
    func invoke(_ device: String, _ command: String, params: String = "null", timeoutMs: Int = 10_000, force: Bool = false) throws -> JSONValue {
        process.write(line: "\(force ? "force" : "invoke") \(device) \(command) \(params) \(timeoutMs)")
        let id = try waitFor("invoking")[0]
        let line = try process.waitForLine(timeout: 30) { $0.hasPrefix("result \(id) ") }
        return try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("result \(id) ".count).utf8))
    }

    func command(_ line: String) { process.write(line: line) }

    deinit { process.killIfRunning() }
}

@Suite(.enabled(if: Python.hasModule("websockets") && Python.hasModule("cryptography"), "needs Python's websockets and cryptography (scripts/setup installs them)"))
struct OpenClawEndToEndTests {
    /// Gateway sim, bridge, one paired node; returns once the node's socket is up at the gateway.
    struct Stack {
        let gateway: OpenClawGatewaySim
        let bridge: BridgeDaemon
        let node: SimulatedNode
        let nodeID: String
        let device: String
        let connectedLine: [String]

        /// system.info (OpenClaw's device.info) is not in an iPhone's default rules: by default it is
        /// allowed here, at approval.
        init(gatewayArguments: [String] = ["--tick-ms", "1000"], nodeArguments: [String] = [], allowSystemInfo: Bool = true) throws {
            gateway = try OpenClawGatewaySim(arguments: gatewayArguments)
            let state = TemporaryDirectory("bridge")
            if allowSystemInfo {
                try Data(#"{"access": {"defaults": {"ios": {"add": ["system.info"]}}}}"#.utf8).write(to: state.url.appendingPathComponent("config.json"))
            }
            bridge = try BridgeDaemon(state: state, arguments: gateway.bridgeArguments)
            node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"] + nodeArguments)
            nodeID = try node.pair(with: bridge)
            if gatewayArguments.contains("--manual") {
                device = ""
                connectedLine = []
                return
            }
            device = try gateway.waitFor("paired")[0]
            connectedLine = try gateway.waitFor("connected")
        }
    }

    @Test func aPairedNodeAppearsAtTheGatewayAndAnswersItsInvokes() throws {
        let stack = try Stack()
        // One device per node, identified as the gateway derives it; a unique name; only commands OpenClaw knows.
        #expect(stack.connectedLine[0] == stack.device && stack.connectedLine[1] == "ios")
        let rest = stack.connectedLine.dropFirst(2).joined(separator: " ")
        #expect(rest.hasPrefix("phone (lanbridge \(stack.nodeID.prefix(4)))|commands="))
        let offered = Set(rest.split(separator: "=").last!.split(separator: ",").map(String.init))
        #expect(offered.contains("canvas.snapshot") && offered.contains("device.info") && !offered.contains("device.echo"))
        #expect(!stack.bridge.logContains("waiting for the gateway's approval"), "the first surface comes with the device")

        let snapshot = try stack.gateway.invoke(stack.device, "canvas.snapshot", params: #"{"width":4,"height":4}"#)
        #expect(snapshot["ok"] == true)
        guard case let .string(text)? = snapshot["payloadJSON"] else { Issue.record("no payloadJSON: \(snapshot)"); return }
        let payload = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(payload["format"] == "png")

        // Renamed on the way: OpenClaw's device.info is lanbridge's system.info.
        let info = try stack.gateway.invoke(stack.device, "device.info")
        #expect(info["ok"] == true)

        // The bridge's status shows the node's gateway session and device ID.
        try stack.bridge.waitForRuntime("the node's gateway session") {
            $0.nodes[stack.nodeID]?.gatewayDeviceId == stack.device && $0.nodes[stack.nodeID]?.gatewaySession?.hasPrefix("connected") == true
        }
        let status = try CLI.run(["status", "--json", "--state-dir", stack.bridge.state.path])
        #expect(status.stdout.contains(stack.device))
        let doctor = try CLI.run(["doctor", "--state-dir", stack.bridge.state.path])
        #expect(doctor.stdout.contains("gateway session \(stack.nodeID)") && doctor.stdout.contains("connected (protocol 4)"), "\(doctor.stdout)")
        let describe = try stack.cli(["nodes", "describe", stack.nodeID, "--json"])
        let described = try JSONDecoder().decode(JSONValue.self, from: Data(describe.stdout.utf8))
        #expect(described["gatewayDeviceId"] == .string(stack.device), "\(describe.stdout)")
    }

    /// Issue 23: a node paired by invite while connected got no socket at the gateway until it
    /// reconnected (its presence was worked out before the core knew it as paired).
    @Test func aNodePairedByInviteIsAtTheGatewayWithoutReconnecting() throws {
        let gateway = try OpenClawGatewaySim()
        let bridge = try BridgeDaemon(arguments: gateway.bridgeArguments)
        let uri = try CLI.json(
            BridgeEndToEndTests.InviteReport.self,
            [
                "invite", "--host", "127.0.0.1", "--port", String(bridge.port),
                "--state-dir", bridge.state.path,
            ]
        ).uri
        let node = try SimulatedNode(arguments: ["--invite", uri, "--name", "tablet"])
        try node.waitFor("connected")
        let device = try gateway.waitFor("paired")[0]
        #expect(try gateway.waitFor("connected")[0] == device)
        #expect(try gateway.invoke(device, "canvas.snapshot", params: #"{"width":2,"height":2}"#)["ok"] == true)
    }

    /// Issue 23: the node → agent direction. A voice transcript, an agent request and a node's own
    /// event reach the gateway as the node.events OpenClaw acts on, on the node's socket, and the
    /// node hears the gateway's reply.
    @Test func voiceAgentAndEventsReachTheGatewayAsNodeEvents() throws {
        let stack = try Stack()
        stack.node.process.write(line: "voice what's on my calendar")
        let voice = try stack.gateway.waitFor("node.event")
        #expect(voice[0] == stack.device && voice[1] == "voice.transcript")
        let transcript = try JSONDecoder().decode(JSONValue.self, from: Data(voice[2...].joined(separator: " ").utf8))
        #expect(transcript["text"] == "what's on my calendar" && transcript["eventId"]?.stringValue?.isEmpty == false, "\(transcript)")
        let heard = try stack.node.waitFor("voice")
        #expect(heard.hasPrefix("ok") && heard.contains(#""handled":true"#), "\(heard)")

        stack.node.process.write(line: "agent hello")
        let agent = try stack.gateway.waitFor("node.event")
        #expect(agent[1] == "agent.request" && agent[2] == #"{"message":"hello"}"#, "\(agent)")
        #expect(try stack.node.waitFor("agent").hasPrefix("ok"))

        // A plain event may not pose as one the bridge makes from calls; the rest pass only as the
        // event catalogue allows (issue 36 §5): a name that wakes the agent needs its grant, and
        // one that attaches the node to a session is refused.
        stack.node.process.write(line: "event agent.request")
        try stack.bridge.waitForLog("comes only from its calls")
        stack.node.process.write(line: "event notifications.changed")
        try stack.bridge.waitForLog("refused an event for the gateway: NOT_GRANTED")
        stack.node.process.write(line: "event chat.subscribe")
        try stack.bridge.waitForLog("refused an event for the gateway: NOT_IN_CATALOGUE")
        let granted = try CLI.run(["nodes", "allow", stack.nodeID, "notifications.changed", "--state-dir", stack.bridge.state.path])
        #expect(granted.status == 0, "\(granted)")
        stack.node.process.write(line: "event notifications.changed")
        let event = try stack.gateway.waitFor("node.event")
        #expect(event[1] == "notifications.changed", "the refused ones never reached the gateway: \(event)")
        let audit = try String(contentsOf: stack.bridge.state.url.appendingPathComponent("audit.jsonl"), encoding: .utf8)
        #expect(audit.contains("event.denied") && audit.contains("chat.subscribe: NOT_IN_CATALOGUE"), "\(audit)")
    }

    /// Issue 36 §5: a rule change that adds a command re-offers the node's commands by reconnecting
    /// its gateway socket; a voice command said right then failed UNAVAILABLE and its transcript
    /// was lost. It waits for the socket now (up to 5 s).
    @Test func aVoiceCommandRightAfterARuleChangeWaitsForTheReofferedSocket() throws {
        // The sim holds the re-offered socket's hello-ok for a second: the voice command lands in that window.
        let stack = try Stack(gatewayArguments: ["--tick-ms", "1000", "--slow-reconnect-ms", "1000"], allowSystemInfo: false)
        let allowed = try CLI.run(["nodes", "allow", stack.nodeID, "system.info", "--state-dir", stack.bridge.state.path])
        #expect(allowed.status == 0, "\(allowed)")
        #expect(try stack.gateway.waitFor("reconnecting")[0] == stack.device)
        stack.node.process.write(line: "voice turn on the lights")
        let heard = try stack.node.waitFor("voice")
        #expect(heard.hasPrefix("ok"), "the transcript waited for the re-offered socket: \(heard)")
        var event = try stack.gateway.waitFor("node.event")
        while event[1] != "voice.transcript" { event = try stack.gateway.waitFor("node.event") }
        #expect(event.joined(separator: " ").contains("turn on the lights"), "\(event)")
    }

    /// Issue 23: an APNs registration reaches the gateway as the push.apns.register OpenClaw's own
    /// wake reads; other providers stay with lanbridge.
    @Test func anAPNsRegistrationReachesTheGatewayForItsOwnWake() throws {
        let stack = try Stack()
        stack.node.process.write(line: "push ntfy https://ntfy.example.net/t")
        #expect(try stack.node.waitFor("push").hasPrefix("ok"))
        stack.node.process.write(line: "push apns \(PushEndToEndTests.token) sandbox com.example.companion")
        #expect(try stack.node.waitFor("push").hasPrefix("ok"))
        let event = try stack.gateway.waitFor("node.event")
        #expect(event[0] == stack.device && event[1] == "push.apns.register", "the ntfy one never went: \(event)")
        let payload = try JSONDecoder().decode(JSONValue.self, from: Data(event[2].utf8))
        #expect(payload == ["transport": "direct", "token": .string(PushEndToEndTests.token), "topic": "com.example.companion", "environment": "sandbox"])
        #expect(!stack.bridge.log.contains(PushEndToEndTests.token))
    }

    /// A command taken away is refused by lanbridge's rules at once, whatever the gateway asks;
    /// its socket is not re-offered for it (issue 60 §5: every reconnect is a moment in which the
    /// gateway answers NOT_CONNECTED), and the node's next connect offers the smaller set.
    @Test func lanbridgesRulesComeFirstWhateverTheGatewayAllows() throws {
        let stack = try Stack()
        // `nodes deny` returns once the daemon holds the rule (store.applied).
        #expect(try stack.cli(["nodes", "deny", stack.nodeID, "canvas.snapshot"]).status == 0)
        let refused = try stack.gateway.invoke(stack.device, "canvas.snapshot")
        #expect(refused["ok"] == false && refused["error"]?["code"] == .string(ErrorMessage.forbidden), "\(refused)")
        #expect(!stack.bridge.logContains("re-offering the node's commands"), "no reconnect for a command taken away")
        // The next connect offers the smaller set.
        stack.node.stop()
        try stack.gateway.waitFor("disconnected")
        let again = try SimulatedNode(state: stack.node.state, port: stack.bridge.port, arguments: ["--name", "phone"])
        try again.waitFor("connected")
        let line = try stack.gateway.waitFor("connected")
        #expect(!line.joined(separator: " ").contains("canvas.snapshot"), "\(line)")
    }

    @Test func aBackgroundedPhoneIsQueuedAtTheGatewayAndDrainedWhenItReturns() throws {
        let stack = try Stack()
        stack.node.process.write(line: "bg")
        try stack.bridge.waitForLog("node moved to the background")
        // The sim prints "queued ACTION" before the invoke's result: the action's ID is read from the result.
        let answer = try stack.gateway.invoke(stack.device, "canvas.snapshot", params: #"{"width":2,"height":2}"#)
        #expect(answer["error"]?["details"]?["code"] == "QUEUED_UNTIL_FOREGROUND")
        #expect(answer["error"]?["details"]?["nodeError"]?["code"] == .string(ErrorMessage.backgroundUnavailable))
        guard case let .string(queued)? = answer["error"]?["details"]?["queuedActionId"] else { Issue.record("not queued: \(answer)"); return }
        stack.node.process.write(line: "fg")
        #expect(try stack.gateway.waitFor("acked") == [queued])
    }

    @Test func whenTheNodeLeavesItsSocketClosesAndItComesBackWithTheSameDevice() throws {
        let stack = try Stack()
        stack.node.stop()
        #expect(try stack.gateway.waitFor("disconnected") == [stack.device])
        let gone = try stack.gateway.invoke(stack.device, "canvas.snapshot")
        #expect(gone["error"]?["details"]?["code"] == "NOT_CONNECTED")

        let again = try SimulatedNode(state: stack.node.state, port: stack.bridge.port, arguments: ["--name", "phone"])
        try again.waitFor("connected")
        #expect(try stack.gateway.waitFor("connected")[0] == stack.device)
    }

    @Test func aRestartedBridgeReconnectsWithTheDeviceTokenAndARotatedTokenFallsBackToTheSharedOne() throws {
        let stack = try Stack()
        stack.bridge.stop()
        try stack.gateway.waitFor("disconnected")
        let bridge = try BridgeDaemon(state: stack.bridge.state, port: stack.bridge.port, arguments: stack.gateway.bridgeArguments)
        try stack.node.waitFor("connected")
        #expect(try stack.gateway.waitFor("connected")[0] == stack.device, "the same identity, no new pairing")
        let devices = OpenClawDevices(directory: StateDirectory(url: stack.bridge.state.url))
        let mode = try FileManager.default.attributesOfItem(atPath: devices.url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        stack.gateway.command("rotate \(stack.device)")
        #expect(try stack.gateway.waitFor("refused") == [stack.device, "AUTH_DEVICE_TOKEN_MISMATCH"])
        #expect(try stack.gateway.waitFor("connected")[0] == stack.device, "reconnected with the shared token")
        _ = bridge
    }

    @Test func revokingANodeDeletesItsGatewayIdentity() throws {
        let stack = try Stack()
        let devices = try String(contentsOf: StateDirectory(url: stack.bridge.state.url).file(OpenClawDevices.fileName), encoding: .utf8)
        #expect(devices.contains(stack.nodeID))
        #expect(try stack.cli(["nodes", "revoke", stack.nodeID]).status == 0)
        #expect(try stack.gateway.waitFor("disconnected") == [stack.device])
        try stack.bridge.waitForLog("OpenClaw identity removed")
        let after = try String(contentsOf: StateDirectory(url: stack.bridge.state.url).file(OpenClawDevices.fileName), encoding: .utf8)
        #expect(!after.contains(stack.nodeID))
    }

    /// The squatting defence of §12 holds here too: a listener owned by someone other than the
    /// allowed owners hears nothing, not even the upgrade request, and learns no identity.
    @Test func aGatewayOwnedBySomeoneElseHearsNothing() throws {
        let gateway = try OpenClawGatewaySim()
        let bridge = try BridgeDaemon(arguments: gateway.bridgeArguments + ["--gateway-owner", "nobody"])
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"])
        try node.pair(with: bridge)
        try bridge.waitForLog("squatting")
        gateway.command("devices")
        #expect(try gateway.waitFor("devices") == ["0", "upgrades", "0"])
    }

    /// Issue 23: the bridge retried a held device every 30 s or more, logged it each time, and
    /// status did not say what the gateway waited for.
    /// Issue 23: the same endpoints as §12. Over wss:// (the certificate checked against the given
    /// roots) and over a Unix socket (its owner checked), a node's socket comes up and is invoked.
    @Test(.enabled(if: ChildProcess.exitStatus("/usr/bin/openssl", ["version"]) == 0, "needs openssl (scripts/setup installs it)"))
    func overTLSAndAUnixSocketTheNodesSocketComesUpAsOverLoopback() throws {
        let directory = TemporaryDirectory("openclaw-endpoints")
        let (cert, key) = try WebSocketInteropTests.selfSignedCertificate(in: directory)
        let socket = directory.url.appendingPathComponent("gw.sock").path
        for listen in [["--tls", cert, key], ["--unix", socket]] {
            let stack = try Stack(gatewayArguments: ["--tick-ms", "1000"] + listen)
            #expect(try stack.gateway.invoke(stack.device, "canvas.snapshot", params: #"{"width":2,"height":2}"#)["ok"] == true, "\(listen[0])")
        }
        // And a wss:// gateway whose certificate the roots do not vouch for hears no connect.
        let untrusted = try OpenClawGatewaySim(arguments: ["--tick-ms", "1000", "--tls", cert, key])
        let bridge = try BridgeDaemon(arguments: Array(untrusted.bridgeArguments.filter { $0 != cert && $0 != "--gateway-ca-file" }))
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"])
        try node.pair(with: bridge)
        try bridge.waitForLog("node's OpenClaw socket down")
        untrusted.command("devices")
        #expect(try untrusted.waitFor("devices")[0] == "0")
    }

    @Test func withManualApprovalTheBridgeSaysWhatTheGatewayHoldsAndTakesTheApprovalWithoutHelp() throws {
        let stack = try Stack(gatewayArguments: ["--manual", "--tick-ms", "1000"])
        let request = try stack.gateway.waitFor("pending")
        #expect(try stack.gateway.waitFor("refused")[1] == "PAIRING_REQUIRED")
        let runtime = try stack.bridge.waitForRuntime("the held device in runtime.json") { $0.nodes[stack.nodeID]?.gatewayApproval != nil }
        #expect(runtime.nodes[stack.nodeID]?.gatewayApproval == .device(request[0]))
        let doctor = try stack.cli(["doctor"])
        #expect(
            doctor.status == 0 && doctor.stdout.contains("WARN gateway session \(stack.nodeID)")
                && doctor.stdout.contains("openclaw devices approve \(request[0])"), "\(doctor.stdout)")
        // Asked again (the same request at the gateway), logged once: two refusals seen by the bridge.
        #expect(try stack.gateway.waitFor("refused")[1] == "PAIRING_REQUIRED")
        try stack.bridge.waitForLog("node's OpenClaw socket down")
        try stack.bridge.waitForLog("node's OpenClaw socket down")
        #expect(stack.bridge.log.components(separatedBy: "holds node").count == 2, "logged once: \(stack.bridge.log)")

        stack.gateway.command("approve \(request[0])")
        try stack.gateway.waitFor("paired")
        #expect(try stack.gateway.waitFor("connected")[0] == request[1], "the next retry, with the node untouched")
        try stack.bridge.waitForRuntime("the session up") {
            $0.nodes[stack.nodeID]?.gatewayApproval == nil && $0.nodes[stack.nodeID]?.gatewaySession?.hasPrefix("connected") == true
        }
    }

    /// A re-offer closes the node's gateway socket: it waits for the invokes in flight there, which
    /// the gateway would otherwise fail as DISCONNECTED.
    @Test func aReofferWaitsForTheInvokesInFlight() throws {
        let stack = try Stack(allowSystemInfo: false)
        stack.gateway.command(#"invoke \#(stack.device) canvas.snapshot {"width":2,"height":2,"delayMs":1500} 10000"#)
        let id = try stack.gateway.waitFor("invoking")[0]
        try stack.node.waitFor("invoke canvas.snapshot")
        #expect(try stack.cli(["nodes", "allow", stack.nodeID, "system.info"]).status == 0)
        try stack.bridge.waitForLog("re-offering the node's commands")
        let result = try stack.gateway.process.waitForLine(timeout: 30) { $0.hasPrefix("result \(id) ") }
        #expect(result.contains(#""ok": true"#), "\(result)")
        var line = try stack.gateway.waitFor("connected")
        while !line.joined(separator: " ").contains("device.info") { line = try stack.gateway.waitFor("connected") }
    }
}

extension OpenClawEndToEndTests.Stack {
    @discardableResult
    func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try CLI.run(arguments + ["--state-dir", bridge.state.path])
    }
}
