import Foundation
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// The daemon, the simulated node and the CLI as real processes over real TCP.
@Suite(.serialized)
struct BridgeEndToEndTests {
    struct PendingRow: Decodable { let requestId: String; let nodeId: String; let codeShown: Bool; let keyChanged: Bool }
    struct NodeRow: Decodable { let nodeId: String; let connected: Bool; let foreground: Bool? }

    @Test func pairByCodeWithApprovalAndTheSameCodeOnBothSides() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Ada's phone"])
        let nodeID = try node.waitFor("node")
        let shown = try node.waitFor("code").split(separator: " ")  // "123456 request abcdefgh"
        try node.waitFor("pending")
        let pending = try CLI.json([PendingRow].self, ["nodes", "pending", "--state-dir", bridge.state.path])
        #expect(pending.count == 1)
        #expect(pending.first?.nodeId == nodeID)
        #expect(pending.first?.codeShown == true)
        // The bridge's own code is compared, never printed: the operator types what the device shows.
        for listing in [["--json"], []] {
            let out = try CLI.run(["nodes", "pending", "--state-dir", bridge.state.path] + listing).stdout
            #expect(!out.contains(String(shown[0])), "nodes pending printed the code:\n\(out)")
        }
        #expect(pending.first?.requestId == String(shown[2]))

        let wrong = try CLI.run(["nodes", "approve", String(shown[2]), "--code", "000000", "--state-dir", bridge.state.path])
        #expect(wrong.status == 1 && wrong.stderr.contains("does not match"))
        let right = try CLI.run(["nodes", "approve", String(shown[2]), "--code", String(shown[0]), "--state-dir", bridge.state.path])
        #expect(right.status == 0 && right.stdout.contains("Approved Ada's phone"))
        let bridgeFingerprint = try CLI.json(Identity.self, ["identity", "--state-dir", bridge.state.path]).fingerprint
        // The approval arrives on the open connection: nothing but "paired" and "connected" follows.
        var after: [String] = []
        while let line = try node.process.nextLine(timeout: 30) {
            after.append(line)
            if line.hasPrefix("connected ") { break }
        }
        #expect(after == ["paired \(bridgeFingerprint)", "connected test-bridge"], "no disconnect, no reconnect: \(after)")
        let listed = try CLI.json([NodeRow].self, ["nodes", "list", "--state-dir", bridge.state.path])
        #expect(listed.map(\.nodeId) == [nodeID])
        node.stop()
        bridge.stop()
    }

    @Test func rejectionIsToldToTheNodeAndBlockHoldsAfterwards() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        let request = try node.waitFor("code").split(separator: " ")[2]
        #expect(try CLI.run(["nodes", "reject", String(request), "--block", "--state-dir", bridge.state.path]).status == 0)
        #expect(try node.waitFor("fatal").contains("rejected"))
        #expect(node.process.wait() == 2)
        // The blocked key comes back: refused before any pairing request is filed.
        let again = try SimulatedNode(state: node.state, port: bridge.port)
        #expect(try again.waitFor("fatal").contains("rejected"))
        #expect(try bridge.store.read().pending.requests.isEmpty)
        bridge.stop()
    }

    @Test func aWaitingNodeIsToldWhenItsRequestExpires() throws {
        // Long enough for the request to be recorded and shown (pair.pending) before it lapses on a
        // loaded machine (1 s lapsed first under a CPU hog, and the node never saw its code).
        let bridge = try BridgeDaemon(arguments: ["--pairing-ttl", "4s", "--pairing-max-wait", "5s"])
        let node = try SimulatedNode(port: bridge.port)
        let request = String(try node.waitFor("code").split(separator: " ")[2])
        #expect(try node.waitFor("fatal").contains("expired"))
        let approve = try CLI.run(["nodes", "approve", request, "--unverified", "--state-dir", bridge.state.path])
        #expect(approve.status == 1 && approve.stderr.contains("expired"), "\(approve.stderr)")
        #expect(try AuditLog(directory: StateDirectory(url: bridge.state.url)).entries().contains { $0.event == "pairing.expired" })
        bridge.stop()
    }

    @Test func aNodeThatAsksAgainKeepsItsRequestID() throws {
        let bridge = try BridgeDaemon()
        let first = try SimulatedNode(port: bridge.port)
        let request = try first.waitFor("code").split(separator: " ")[2]
        first.stop()
        let second = try SimulatedNode(state: first.state, port: bridge.port)
        #expect(try second.waitFor("code").split(separator: " ")[2] == request)
        #expect(try bridge.store.read().pending.requests.count == 1)
        second.stop()
        bridge.stop()
    }

    @Test func revokeDropsALiveNodeAtOnce() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        let nodeID = try node.pair(with: bridge)
        #expect(try CLI.run(["nodes", "revoke", nodeID, "--state-dir", bridge.state.path]).status == 0)
        #expect(try node.waitFor("fatal").contains("revoked"))
        #expect(node.process.wait() == 2)
        #expect(try CLI.run(["nodes", "revoke", nodeID, "--state-dir", bridge.state.path]).status == 1, "unknown ID now")
        bridge.stop()
    }

    @Test func aPairedNodeReconnectsWithoutRepairingAfterABridgeRestart() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        try node.pair(with: bridge)
        bridge.stop()
        try node.waitFor("disconnected")
        let restarted = try BridgeDaemon(state: bridge.state, port: bridge.port)
        try node.waitFor("connected")
        try restarted.waitForLog("node connected")
        #expect(try restarted.store.read().pending.requests.isEmpty, "no new pairing request")
        node.stop()
        restarted.stop()
    }

    @Test func anInviteWorksExactlyOnce() throws {
        let bridge = try BridgeDaemon()
        let uri = try CLI.json(
            InviteReport.self,
            [
                "invite", "--name", "Tablet", "--host", "127.0.0.1", "--port", String(bridge.port),
                "--state-dir", bridge.state.path,
            ]
        ).uri
        let first = try SimulatedNode(arguments: ["--invite", uri, "--platform", "android"])
        try first.waitFor("paired")
        try first.waitFor("connected")
        let paired = try bridge.store.read().paired.nodes
        #expect(paired.map(\.details.displayName) == ["Tablet"] && paired.first?.pairingMethod == .invite)
        #expect(paired.first?.access.allow == AccessRules.everydayCanvas + ["camera.list"], "android's everyday defaults; no sms.send (issue 26)")
        let second = try SimulatedNode(arguments: ["--invite", uri])
        #expect(try second.waitFor("fatal").contains("refused the invite"))
        #expect(try bridge.store.read().paired.nodes.count == 1)
        first.stop()
        bridge.stop()
    }

    @Test func aPinnedNodeRefusesABridgeWithAnotherKey() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        try node.pair(with: bridge)
        node.stop()
        bridge.stop()
        // Another machine (another key) answers on the same address.
        let impostor = try BridgeDaemon(port: bridge.port)
        let again = try SimulatedNode(state: node.state, port: impostor.port)
        let fatal = try again.waitFor("fatal")
        #expect(fatal.contains("presented key") && fatal.contains("refusing"))
        #expect(again.process.wait() == 2)
        #expect(try impostor.store.read().pending.requests.isEmpty, "it never even asked to pair")
        impostor.stop()
    }

    @Test func anUnpairedKeyGetsNothingButNotPaired() throws {
        let bridge = try BridgeDaemon()
        // Something to leak, if anything leaked.
        let paired = try SimulatedNode(port: bridge.port, arguments: ["--name", "secret-device"])
        try paired.pair(with: bridge)
        let probe = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/unpaired_probe.py").path, String(bridge.port)])
        var replies: [String] = []
        while let line = try probe.nextLine() { replies.append(line) }
        #expect(probe.wait() == 0, "\(probe.standardError)")
        #expect(replies.first?.contains("\"paired\": false") == true)
        #expect(replies.count == 5)
        for reply in replies.dropFirst() {
            #expect(reply.contains("\"code\": \"NOT_PAIRED\""), "\(reply)")
            #expect(!reply.contains("secret-device") && !reply.contains("canvas"))
        }
        paired.stop()
        bridge.stop()
    }

    @Test func aHandshakeFloodFromOneAddressDoesNotStopAnotherNodePairing() throws {
        let bridge = try BridgeDaemon()
        let flood = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/flood.py").path, String(bridge.port), "127.0.0.2", "300"],
            standardInput: true)
        _ = try flood.waitForLine { $0 == "flood done" }
        try bridge.waitForLog("refused connection: 127.0.0.2")  // over the per-address cap, then locked out
        let node = try SimulatedNode(port: bridge.port)
        try node.pair(with: bridge)
        flood.signal(SIGKILL)
        node.stop()
        bridge.stop()
    }

    @Test func aTamperedAuditLogIsDetected() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        try node.pair(with: bridge)
        node.stop()
        bridge.stop()
        #expect(try CLI.run(["audit", "verify", "--state-dir", bridge.state.path]).status == 0)
        let log = bridge.state.file("audit.jsonl")
        var lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count >= 2)
        lines[0] = lines[0].replacingOccurrences(of: "pairing.requested", with: "pairing.rejected")
        try (lines.joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        let verify = try CLI.run(["audit", "verify", "--state-dir", bridge.state.path])
        #expect(verify.status == 1 && verify.stdout.contains("TAMPERED") && verify.stdout.contains("line 2"))
        // Cutting lines off the end is found too (the anchored head), and so is a pairing the
        // remaining log no longer explains.
        try (lines.prefix(1).joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        let cut = try CLI.run(["audit", "verify", "--state-dir", bridge.state.path])
        #expect(cut.status == 1 && cut.stdout.contains("TRUNCATED") && cut.stdout.contains("INCOMPLETE"), "\(cut.stdout)")
    }

    struct Identity: Decodable { let fingerprint: String }
    struct InviteReport: Decodable { let uri: String }
}

extension BridgeEndToEndTests {
    /// PROTOCOL.md is enough: a Python client written from it pairs by code with the real daemon.
    @Test func anIndependentPythonClientPairsByCode() throws {
        let bridge = try BridgeDaemon()
        let python = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/pair_by_code.py").path, String(bridge.port)])
        let shown = try python.waitForLine { $0.hasPrefix("code ") }.split(separator: " ")
        let pending = try CLI.json([PendingRow].self, ["nodes", "pending", "--state-dir", bridge.state.path])
        #expect(pending.first?.codeShown == true)  // the approval below proves both sides derived the same code
        #expect(try CLI.run(["nodes", "approve", String(shown[3]), "--code", String(shown[1]), "--state-dir", bridge.state.path]).status == 0)
        let resolved = try python.waitForLine { $0.hasPrefix("resolved ") }.split(separator: " ")
        #expect(resolved[1] == "approved" && String(resolved[2]) == pending.first?.nodeId)
        #expect(python.wait() == 0, "\(python.standardError)")
        bridge.stop()
    }
}

extension BridgeEndToEndTests {
    @Test func aNodeThatFallsSilentIsDroppedAfterTheIdleTimeout() throws {
        let bridge = try BridgeDaemon(arguments: ["--idle-timeout", "1s", "--ping-interval", "60s"])
        let node = try SimulatedNode(port: bridge.port)
        try node.pair(with: bridge)
        node.process.signal(SIGSTOP)  // alive as far as TCP knows, but silent: what a half-open peer looks like
        try bridge.waitForLog("silent past the idle timeout")
        try bridge.waitForLog("node disconnected")
        node.process.signal(SIGCONT)
        try node.waitFor("connected")  // and it comes back on its own
        node.stop()
        bridge.stop()
    }

    @Test func aReconnectWithThePairedKeyReplacesTheOldSession() throws {
        let bridge = try BridgeDaemon()
        let first = try SimulatedNode(port: bridge.port)
        try first.pair(with: bridge)
        let second = try SimulatedNode(state: first.state, port: bridge.port)  // same key
        try second.waitFor("connected")
        #expect(try first.waitFor("fatal").contains("replaced"))
        try bridge.waitForLog("replacing its old session")
        #expect(try bridge.store.read().paired.nodes.count == 1)
        second.stop()
        bridge.stop()
    }
}

extension BridgeEndToEndTests {
    /// A device's claims reach the operator's terminal: escape sequences must not.
    @Test func aHostileDisplayNameCannotDriveTheOperatorsTerminal() throws {
        let bridge = try BridgeDaemon()
        let hostile = "Ada\u{1B}[2K\u{1B}[1A\rcode 000000\u{07}"
        let python = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/pair_by_code.py").path, String(bridge.port), hostile])
        _ = try python.waitForLine { $0.hasPrefix("code ") }
        let listing = try CLI.run(["nodes", "pending", "--state-dir", bridge.state.path])
        #expect(listing.status == 0)
        #expect(!listing.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\r" }, "\(listing.stdout)")
        #expect(listing.stdout.contains("Ada[2K[1Acode 000000"))
        python.signal(SIGKILL)
        bridge.stop()
    }
}

extension BridgeEndToEndTests {
    @Test func nodesListShowsForegroundAndBackgroundAsTheNodeReportsThem() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        let nodeID = try node.pair(with: bridge)
        func listed() throws -> NodeRow? {
            try CLI.json([NodeRow].self, ["nodes", "list", "--state-dir", bridge.state.path]).first { $0.nodeId == nodeID }
        }
        // `nodes list` reads runtime.json, written a moment after the change it shows (and its log line).
        try bridge.waitForRuntime("the node in the foreground") { $0.nodes[nodeID]?.foreground == true }
        #expect(try listed()?.foreground == true)
        node.process.write(line: "bg")
        try bridge.waitForRuntime("the node in the background") { $0.nodes[nodeID]?.foreground == false }
        #expect(try listed()?.connected == true && listed()?.foreground == false)
        node.stop()
        try bridge.waitForRuntime("the node gone") { $0.nodes[nodeID] == nil }
        #expect(try listed()?.connected == false)
        bridge.stop()
    }
}

extension BridgeEndToEndTests {
    /// Stopping the daemon writes when its connected nodes were last seen, through the I/O thread
    /// as every store write now goes (StateIO waits for what is queued before it stops).
    @Test func stoppingTheBridgeRecordsWhenConnectedNodesWereLastSeen() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        let nodeID = try node.pair(with: bridge)
        let store = PairingStore(directory: StateDirectory(url: bridge.state.url))
        let pairedAt = try #require(try store.read().paired.nodes.first { $0.nodeId.description == nodeID }).lastSeen
        // lastSeen is stored to the second: let one pass (time itself is what is waited for).
        Thread.sleep(forTimeInterval: 1.2)
        bridge.stop()
        let lastSeen = try #require(try store.read().paired.nodes.first { $0.nodeId.description == nodeID }).lastSeen
        #expect(lastSeen > pairedAt, "lastSeen \(lastSeen) was not written at stop (paired \(pairedAt))")
        node.stop()
    }
}
