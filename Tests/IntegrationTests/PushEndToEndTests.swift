import Foundation
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// Issue 23: a node's push registration (PROTOCOL.md §9.6) with the real daemon and node-sim.
struct PushEndToEndTests {
    static let token = "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592"

    @Test func aRegistrationIsStoredPrivatelyShownWithoutItsTokenAndGoesWithThePairing() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"])
        let nodeID = try node.pair(with: bridge)
        node.process.write(line: "push apns \(Self.token) production com.example.companion")
        #expect(try node.waitFor("push").hasPrefix("ok"))
        node.process.write(line: "push apns not-hex production com.example.companion")
        #expect(try node.waitFor("push").hasPrefix("error INVALID_REQUEST"))

        let directory = StateDirectory(url: bridge.state.url)
        let file = directory.file(PushTokens.fileName)
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int == 0o600)
        #expect(try PushTokens(directory: directory).record(for: try #require(Fingerprint(nodeID)))?.registration.token == Self.token)

        let describe = try CLI.run(["nodes", "describe", nodeID, "--json", "--state-dir", bridge.state.path])
        let described = try JSONDecoder().decode(JSONValue.self, from: Data(describe.stdout.utf8))
        #expect(described["push"]?["provider"] == "apns" && described["push"]?["topic"] == "com.example.companion")
        #expect(described["push"]?["tokenHash"] == .string(Hex.encode(SHA256.hash(Array(Self.token.utf8)).prefix(8))))
        let text = try CLI.run(["nodes", "describe", nodeID, "--state-dir", bridge.state.path]).stdout
        #expect(text.contains("push:       apns (production) for com.example.companion"), "\(text)")
        // Nowhere but its 0600 file: not in paired.json, the audit log, the CLI's output or the daemon's log.
        for shown in [
            try String(contentsOf: directory.file("paired.json"), encoding: .utf8),
            try String(contentsOf: directory.file(AuditLog.fileName), encoding: .utf8), describe.stdout, text, bridge.log,
        ] {
            #expect(!shown.contains(Self.token))
        }
        #expect(try String(contentsOf: directory.file(AuditLog.fileName), encoding: .utf8).contains("node.push-registered"))
        // The same registration again (issue 36: 83 audit lines in 30 s from one node) changes nothing.
        for _ in 0..<5 {
            node.process.write(line: "push apns \(Self.token) production com.example.companion")
            #expect(try node.waitFor("push").hasPrefix("ok"))
        }
        let audit = try String(contentsOf: directory.file(AuditLog.fileName), encoding: .utf8)
        #expect(audit.components(separatedBy: "node.push-registered").count - 1 == 1, "one line for one registration: \(audit)")

        #expect(try CLI.run(["nodes", "revoke", nodeID, "--state-dir", bridge.state.path]).status == 0)
        try bridge.waitForLog("removed push tokens of nodes no longer paired")
        #expect(try PushTokens(directory: directory).record(for: try #require(Fingerprint(nodeID))) == nil)
    }
}
