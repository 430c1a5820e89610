import Foundation
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import Testing
import TestSupport

/// lanbridge in front of OpenClaw's real gateway (issue 60): the gateway built from OpenClaw's own
/// source (Tests/Tools/openclaw), a real `lanbridge serve --gateway-protocol openclaw`, real
/// node-sims, and OpenClaw's own operator tools (its CLI and its `GatewayClient`). The Python
/// simulator (OpenClawEndToEndTests) stays for what this gateway cannot be made to do on cue.
@Suite(.serialized, .enabled(if: OpenClawGateway.canRun, Comment(rawValue: OpenClawGateway.missing ?? "")))
struct OpenClawRealGatewayTests {
    /// The real gateway, its operator, a bridge in front of it and one paired node-sim, attached.
    struct Stack {
        let gateway: OpenClawGateway
        let admin: OpenClawOperator
        let bridge: BridgeDaemon
        let node: SimulatedNode
        let nodeID: String
        /// The node's device ID at the gateway.
        let device: String

        init(gatewayConfig: String = "{}", bridgeConfig: String? = #"{"access": {"defaults": {"ios": {"add": ["system.info"]}}}}"#) throws {
            gateway = try OpenClawGateway(config: gatewayConfig)
            admin = try gateway.admin()
            let state = TemporaryDirectory("bridge")
            if let bridgeConfig { try Data(bridgeConfig.utf8).write(to: state.url.appendingPathComponent("config.json")) }
            bridge = try BridgeDaemon(state: state, arguments: gateway.bridgeArguments)
            node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"])
            nodeID = try node.pair(with: bridge)
            device = try Self.attached(bridge)
        }

        /// The device ID from the bridge's next "node attached" line: the gateway has registered the
        /// node's socket by then (it answers hello-ok after registering).
        static func attached(_ bridge: BridgeDaemon, within seconds: TimeInterval = 60) throws -> String {
            let line = try bridge.waitForLog("node attached to the OpenClaw gateway", within: seconds)
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("deviceId=") }) else { throw OpenClawGateway.Failure(description: line) }
            return String(field.dropFirst("deviceId=".count))
        }

        func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try CLI.run(arguments + ["--state-dir", bridge.state.path])
        }
    }

    /// Pairing by code puts the node at the gateway with its commands and caps; an invoke with
    /// params brings a PNG back; a command lanbridge does not allow is refused.
    @Test func aNodePairedByCodeIsListedAndInvokedWithParams() throws {
        let stack = try Stack()
        guard let listed = try stack.gateway.node(stack.device) else { Issue.record("not in nodes status"); return }
        #expect(listed["connected"] == true && listed["platform"] == "ios")
        #expect(listed["displayName"] == .string("phone (lanbridge \(stack.nodeID.prefix(4)))"), "\(listed)")
        guard case let .array(commands)? = listed["commands"], case let .array(caps)? = listed["caps"] else { Issue.record("\(listed)"); return }
        #expect(commands.contains("canvas.snapshot") && commands.contains("canvas.navigate") && !commands.contains("device.echo"), "\(commands)")
        #expect(caps.contains("canvas"), "\(caps)")

        let snapshot = try stack.admin.invoke(stack.device, "canvas.snapshot", params: ["width": 4, "height": 4])
        #expect(snapshot["ok"] == true, "\(snapshot)")
        let payload = snapshot["payload"]?["payload"]
        #expect(payload?["format"] == "png" && payload?["width"] == 4, "\(snapshot)")
        if case let .string(base64)? = payload?["base64"], let png = Data(base64Encoded: base64) {
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        } else {
            Issue.record("no base64 PNG: \(snapshot)")
        }
        // And through OpenClaw's CLI, as its operator would type it.
        let typed = try stack.gateway.cliJSON(["nodes", "invoke", "--node", stack.device, "--command", "canvas.snapshot", "--params", #"{"width":2,"height":2}"#])
        #expect(typed["ok"] == true && typed["payload"]?["format"] == "png", "\(typed)")

        // Denied by lanbridge's rules: the gateway still lists it until the next re-offer, and
        // lanbridge refuses it with its reason.
        #expect(try stack.cli(["nodes", "deny", stack.nodeID, "canvas.navigate"]).status == 0)
        let refused = try stack.admin.invoke(stack.device, "canvas.navigate", params: ["url": "https://example.com/"])
        #expect(refused["ok"] == false, "\(refused)")
        let message = refused["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("NOT_ALLOWLISTED") || message.contains("not declared") || message.contains("not allowed"), "\(refused)")
    }

    /// Issue 60 §2: after the gateway's shared token is rotated, a node that stayed connected comes
    /// back at its next redial with the device token the gateway issued it, though lanbridge's
    /// token file still holds the old shared token.
    @Test func aSharedTokenRotationDoesNotLockConnectedNodesOut() throws {
        let stack = try Stack()
        let second = try SimulatedNode(port: stack.bridge.port, arguments: ["--name", "tablet"])
        try second.pair(with: stack.bridge)
        let secondDevice = try Stack.attached(stack.bridge)
        _ = try stack.gateway.rotateSharedToken()
        // Both sockets were closed by the gateway (shared-auth sessions end with the token) and both
        // come back, each with its own device token.
        var back: Set<String> = []
        while back.count < 2 { back.insert(try Stack.attached(stack.bridge, within: 20)) }
        #expect(back == [stack.device, secondDevice])
        #expect(!stack.bridge.logContains("gateway token mismatch"), "no redial used the old shared token")
        // The operator's client had the old token too: a new one, with the new token.
        let answer = try stack.gateway.admin().invoke(secondDevice, "canvas.snapshot", params: ["width": 2, "height": 2])
        #expect(answer["ok"] == true, "\(answer)")
    }
}
