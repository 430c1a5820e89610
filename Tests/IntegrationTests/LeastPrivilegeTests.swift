import Foundation
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// Issue 26: sensitive commands (capture, SMS, location, input, system.run) are granted on
/// purpose, never by a platform default; what old defaults granted is flagged, not taken away.
@Suite struct LeastPrivilegeTests {
    struct Approved: Decodable {
        struct Withheld: Decodable, Equatable { let command: String; let sensitive: Bool; let reason: String }
        let nodeId: String
        let granted: [String]
        let withheld: [Withheld]
        let access: AccessRules
    }

    @Test func anIPhoneApprovedWithNoFlagsCannotSnapUntilTheOperatorAllowsIt() throws {
        let stack = try RelayStack(nodeArguments: ["--camera"])
        defer { stack.stop() }
        #expect(try stack.gateway.invoke(stack.nodeID, "camera.list").ok, "camera.list is everyday")
        let denied = try stack.gateway.invoke(stack.nodeID, "camera.snap")
        let hint = "lanbridge nodes allow \(stack.nodeID) camera.snap"
        #expect(denied.code == ErrorMessage.forbidden)
        #expect(denied.error?["details"]?["reason"] == "NOT_ALLOWLISTED" && denied.error?["details"]?["sensitive"] == true)
        #expect(denied.error?["details"]?["hint"]?.stringValue == hint && denied.error?["message"]?.stringValue?.contains(hint) == true)

        let allowed = try stack.cli(Array(hint.split(separator: " ").dropFirst().map(String.init)))
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try stack.gateway.invoke(stack.nodeID, "camera.snap").ok, "granted on purpose, at once")
        #expect(try stack.bridge.store.read().paired.nodes.first?.access.confirmed == ["camera.snap"])
    }

    @Test func approvalShowsWhatItWithholdsAndTakesSensitiveGrantsByName() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { bridge.stop() }
        func approve(_ node: SimulatedNode, _ flags: [String]) throws -> (Approved, String) {
            let code = try node.waitFor("code").split(separator: " ")
            let arguments = ["nodes", "approve", String(code[2]), "--code", String(code[0]), "--state-dir", bridge.state.path] + flags
            let report = try CLI.json(Approved.self, arguments)
            try node.waitFor("connected")
            return (report, String(code[2]))
        }
        let plain = try SimulatedNode(port: bridge.port, arguments: ["--name", "Plain", "--camera"])
        let (report, _) = try approve(plain, [])
        #expect(report.granted == AccessRules.everydayCanvas + ["camera.list"])
        #expect(report.withheld.map(\.command).sorted() == ["camera.snap", "device.echo", "system.info"])
        #expect(report.withheld.first { $0.command == "camera.snap" }?.sensitive == true)
        #expect(report.withheld.first { $0.command == "system.info" }?.sensitive == false)

        let chosen = try SimulatedNode(port: bridge.port, arguments: ["--name", "Chosen", "--camera"])
        let (granted, request) = try approve(chosen, ["--allow", "camera.snap", "--allow", "device.echo"])
        #expect(granted.granted == AccessRules.everydayCanvas + ["camera.list", "camera.snap", "device.echo"])
        #expect(granted.access.confirmed == ["camera.snap"] && !granted.withheld.contains { $0.sensitive })
        let audit = try String(contentsOf: bridge.state.url.appendingPathComponent("audit.jsonl"), encoding: .utf8)
        let entry = try #require(audit.split(separator: "\n").first { $0.contains("\"pairing.approved\"") && $0.contains(request) })
        #expect(entry.contains("sensitive, on purpose: camera.snap"), "\(entry)")

        // The text form names what was withheld and the line that grants it.
        let third = try SimulatedNode(port: bridge.port, arguments: ["--name", "Third", "--camera"])
        let code = try third.waitFor("code").split(separator: " ")
        let pending = try CLI.run(["nodes", "pending", "--state-dir", bridge.state.path]).stdout
        #expect(pending.contains("\(code[2]) also declares camera.snap (sensitive)"), "\(pending)")
        let text = try CLI.run(["nodes", "approve", String(code[2]), "--code", String(code[0]), "--state-dir", bridge.state.path])
        #expect(text.stdout.contains("Not granted, sensitive") && text.stdout.contains("nodes allow") && text.stdout.contains("camera.snap"), "\(text.stdout)")
    }

    @Test func anInviteCanPreauthoriseASensitiveCommandAndABadOneChangesNothing() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { bridge.stop() }
        let refused = try CLI.run(["invite", "--no-qr", "--host", "127.0.0.1", "--allow", "camera.snpa", "--state-dir", bridge.state.path])
        #expect(refused.status == 64 && refused.stderr.contains("camera.snpa"))
        #expect(try bridge.store.read().invites.invites.isEmpty, "a refused command writes nothing")
        let uri = try CLI.json(
            BridgeEndToEndTests.InviteReport.self,
            [
                "invite", "--host", "127.0.0.1", "--port", String(bridge.port),
                "--allow-sensitive", "--state-dir", bridge.state.path,
            ]
        ).uri
        let node = try SimulatedNode(arguments: ["--invite", uri, "--camera", "--platform", "android"])
        try node.waitFor("connected")
        let access = try #require(try bridge.store.read().paired.nodes.first?.access)
        #expect(access.allow == AccessRules.everydayCanvas + ["camera.list", "camera.snap"] && access.confirmed == ["camera.snap"])
    }

    /// A state directory as 0.7.0 wrote it: an iPhone with the old defaults (capture, location).
    @Test func anUpgradeKeepsTheOldGrantAndFlagsIt() throws {
        let state = TemporaryDirectory("upgrade")
        let key = X25519.KeyPair.generate().publicKey
        let id = Fingerprint(publicKey: key).description
        let paired = """
            {"version":1,"nodes":[{"nodeId":"\(id)","publicKey":"\(Data(key).base64EncodedString())",
              "details":{"displayName":"Ada's phone","platform":"ios","caps":["canvas","camera"],"commands":["canvas.present","camera.list","camera.snap","location.get"],
                         "flags":{"requiresForeground":true,"supportsInputInjection":false}},
              "pairingMethod":"code","pairedAt":"2026-10-01T10:00:00Z","firstSeen":"2026-10-01T10:00:00Z","lastSeen":"2026-10-02T10:00:00Z",
              "access":{"allow":["canvas.*","camera.list","camera.snap","screen.record","location.get"],"deny":[]}}],"blocked":[]}
            """
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: state.path)
        FileManager.default.createFile(atPath: state.url.appendingPathComponent("paired.json").path, contents: Data(paired.utf8), attributes: [.posixPermissions: 0o600])
        let run = { (arguments: [String]) in try CLI.run(arguments + ["--state-dir", state.path]) }

        let doctor = try run(["doctor"])
        #expect(doctor.stdout.contains("WARN grants of \(id)") && doctor.stdout.contains("canvas.*, camera.snap, screen.record, location.get"), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("--confirm-defaults"))
        let described = try run(["nodes", "describe", id])
        #expect(described.stdout.contains("granted by an old default"), "\(described.stdout)")
        #expect(try PairingStore(directory: StateDirectory(url: state.url)).read().paired.nodes[0].access.allow.contains("camera.snap"), "kept")

        #expect(try run(["nodes", "deny", id, "location.get"]).status == 0)
        #expect(try run(["nodes", "allow", id, "--confirm-defaults"]).stdout.contains("Kept canvas.*, camera.snap, screen.record"))
        let after = try PairingStore(directory: StateDirectory(url: state.url)).read().paired.nodes[0]
        #expect(after.access.allow == ["canvas.*", "camera.list", "camera.snap", "screen.record"] && after.grantedByOldDefault.isEmpty)
        #expect(!(try run(["doctor"])).stdout.contains("WARN grants"))
    }
}
