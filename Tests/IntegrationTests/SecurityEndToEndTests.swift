import Foundation
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// The attacks of the adversarial review, run against the real daemon (issue: pairing that cannot
/// be ground, admission that cannot be starved).
@Suite(.serialized)
struct SecurityEndToEndTests {
    struct PendingRow: Decodable {
        let requestId: String
        let codeShown: Bool
        let challenges: Int
        let codeMismatches: Int
        let locked: String?
    }

    func python(_ script: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(URL(fileURLWithPath: Python.executable), [Repository.url("Tests/IntegrationTests/python/\(script)").path] + arguments)
    }

    func lines(of child: ChildProcess) throws -> [String] {
        var out: [String] = []
        while let line = try child.nextLine() { out.append(line) }
        #expect(child.wait() == 0, "\(child.standardError)")
        return out
    }

    func audit(_ bridge: BridgeDaemon) throws -> [AuditEntry] {
        try AuditLog(directory: StateDirectory(url: bridge.state.url)).entries()
    }

    /// Re-asking re-rolls the bridge's nonce: the fourth challenge for one request is refused, the
    /// request is locked for good, and every step is in the audit log and in `nodes pending`.
    @Test func theCodeCannotBeReRolledPastThreeChallenges() throws {
        let bridge = try BridgeDaemon()
        let replies = try lines(of: try python("grind_code.py", [String(bridge.port), "6"]))
        #expect(replies.prefix(3).allSatisfy { $0.hasPrefix("challenge ") }, "\(replies)")
        #expect(replies.dropFirst(3).allSatisfy { $0.hasPrefix("refused PAIRING_FAILED") && $0.contains("can never be approved") }, "\(replies)")
        let pending = try CLI.json([PendingRow].self, ["nodes", "pending", "--state-dir", bridge.state.path])
        #expect(pending.count == 1)
        let request = try #require(pending.first)
        #expect(request.challenges == 3 && request.locked == "too-many-challenges" && !request.codeShown)
        let table = try CLI.run(["nodes", "pending", "--state-dir", bridge.state.path]).stdout
        #expect(table.contains("LOCKED") && table.contains("3/3"), "\(table)")
        let approve = try CLI.run(["nodes", "approve", request.requestId, "--unverified", "--state-dir", bridge.state.path])
        #expect(approve.status == 1 && approve.stderr.contains("can never be approved"), "\(approve.stderr)")
        let events = try audit(bridge).map(\.event)
        #expect(events.filter { $0 == "pairing.challenged" }.count == 3)
        #expect(events.contains("pairing.locked"))
        #expect(try bridge.store.read().paired.nodes.isEmpty)
        bridge.stop()
    }

    /// What a man in the middle looks like: the reveal does not match. The request is locked.
    @Test func aFailedRevealCanNeverBeApproved() throws {
        let bridge = try BridgeDaemon()
        let replies = try lines(of: try python("grind_code.py", [String(bridge.port), "1", "bad-reveal"]))
        #expect(replies == ["refused PAIRING_FAILED the revealed nonce does not match its commitment"])
        let request = try #require(try CLI.json([PendingRow].self, ["nodes", "pending", "--state-dir", bridge.state.path]).first)
        #expect(request.locked == "commitment-failed")
        for arguments in [["--unverified"], ["--code", "000000"]] {
            let approve = try CLI.run(["nodes", "approve", request.requestId, "--state-dir", bridge.state.path] + arguments)
            #expect(approve.status == 1 && approve.stderr.contains("man in the middle"), "\(approve.stderr)")
        }
        #expect(try audit(bridge).contains { $0.event == "pairing.locked" && $0.detail?.contains("commitment-failed") == true })
        bridge.stop()
    }

    /// A wrong --code is counted and audited; approving without comparing needs --unverified.
    @Test func wrongCodesAreAuditedAndSkippingTheComparisonMustBeSaid() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port)
        let shown = try node.waitFor("code").split(separator: " ")
        try node.waitFor("pending")
        let request = String(shown[2])
        let wrong = try CLI.run(["nodes", "approve", request, "--code", shown[0] == "000000" ? "111111" : "000000", "--state-dir", bridge.state.path])
        #expect(wrong.status == 1 && wrong.stderr.contains("does not match"))
        let bare = try CLI.run(["nodes", "approve", request, "--state-dir", bridge.state.path])
        #expect(bare.status == 64 && bare.stderr.contains("--unverified"), "\(bare.stderr)")
        let typo = try CLI.run(["nodes", "approve", request, "--code", "abc", "--state-dir", bridge.state.path])
        #expect(typo.status == 64, "a code that is not 6 digits is a usage error, not a mismatch")
        #expect(try CLI.json([PendingRow].self, ["nodes", "pending", "--state-dir", bridge.state.path]).first?.codeMismatches == 1)
        let unverified = try CLI.run(["nodes", "approve", request, "--unverified", "--state-dir", bridge.state.path])
        #expect(unverified.status == 0 && unverified.stdout.contains("WITHOUT comparing"))
        try node.waitFor("connected")
        let entries = try audit(bridge)
        #expect(entries.contains { $0.event == "pairing.code-mismatch" && $0.actor.hasPrefix("uid:") })
        #expect(entries.contains { $0.event == "pairing.approved" && $0.detail?.hasPrefix("UNVERIFIED") == true })
        node.stop()
        bridge.stop()
    }

    func bridge(config: String) throws -> BridgeDaemon {
        let state = TemporaryDirectory("bridge")
        let file = state.file("config.json")
        try Data(config.utf8).write(to: file)
        return try BridgeDaemon(state: state, arguments: ["--config", file.path])
    }

    /// An unpaired key may hold a session only to pair: one that never asks is closed, pings or not.
    @Test func anUnpairedSessionThatNeverAsksToPairIsClosed() throws {
        let bridge = try bridge(config: #"{"admission": {"unpairedDeadlineSeconds": 1}}"#)
        let idle = try python("idle_unpaired.py", [String(bridge.port)])
        #expect(try idle.nextLine() == "welcome")
        _ = try idle.waitForLine { $0.hasPrefix("closed after") }  // throws if the session stays open
        try bridge.waitForLog("neither paired nor asked to in time")
        bridge.stop()
    }

    /// 200 loopback addresses with 4 slow, silent connections each stay under every per-address
    /// limit. A paired node still reconnects and a new node still pairs; how long each took, with
    /// and without the flood, is printed (timings are reported, not asserted).
    @Test func aFloodFromHundredsOfAddressesLocksNobodyOut() throws {
        let bridge = try BridgeDaemon()
        let paired = try SimulatedNode(port: bridge.port, arguments: ["--name", "paired"])
        try paired.pair(with: bridge)
        paired.stop()
        func reconnect() throws -> Double {
            let start = Date()
            let again = try SimulatedNode(state: paired.state, port: bridge.port)
            try again.waitFor("connected")
            defer { again.stop() }
            return Date().timeIntervalSince(start) * 1000
        }
        func pairNew() throws -> Double {
            let start = Date()
            let node = try SimulatedNode(port: bridge.port)
            try node.pair(with: bridge)
            defer { node.stop() }
            return Date().timeIntervalSince(start) * 1000
        }
        let calm = (try reconnect(), try pairNew())
        let flood = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/flood_many.py").path, String(bridge.port), "200", "4", "120"],
            standardInput: true)
        defer { flood.killIfRunning() }
        #expect(try flood.nextLine() == "flooding")
        let flooded = (try reconnect(), try pairNew())
        flood.closeStandardInput()
        let summary = try flood.waitForLine { $0.hasPrefix("opened ") }.split(separator: " ")
        #expect(Int(summary[1]) ?? 0 >= 800, "the flood ran: \(summary)")
        print(
            String(
                format: "admission flood (200 addresses x 4 slow connections, %@ opened, %@ closed by the bridge): "
                    + "paired node reconnects in %.0f ms (%.0f ms calm, %.1fx), a new node pairs in %.0f ms (%.0f ms calm, %.1fx)",
                String(summary[1]), String(summary[3]), flooded.0, calm.0, flooded.0 / calm.0, flooded.1, calm.1, flooded.1 / calm.1))
        bridge.stop()
    }
}
