import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// Issue 52 §3: every invoke through the bridge leaves one record the operator can read: an
/// answered one, a refused one and one of the operator's own, each with who asked and how it ended;
/// never the params.
@Suite(.serialized)
struct ActivityEndToEndTests {
    @Test func theFeedShowsEachInvokeWithWhoAskedAndHowItEnded() throws {
        let stack = try RelayStack()
        defer { stack.stop() }
        #expect(try stack.gateway.invoke(stack.nodeID, "canvas.snapshot", params: ["secret": "do-not-log-me"]).ok)
        #expect(try !stack.gateway.invoke(stack.nodeID, "sms.send").ok)
        #expect(try stack.cli(["nodes", "invoke", "--node", stack.nodeID, "--command", "canvas.hide"]).status == 0)

        let listed = try stack.cli(["activity", "--json"])
        #expect(listed.status == 0, "\(listed)")
        #expect(!listed.stdout.contains("do-not-log-me"), "never the params")
        let records = try JSONDecoder().decode([JSONValue].self, from: Data(listed.stdout.utf8))
        let seen = records.map { "\($0["command"]?.stringValue ?? "") \($0["asker"]?.stringValue ?? "") \($0["outcome"]?.stringValue ?? "")" }
        #expect(seen == ["canvas.snapshot gateway ok", "sms.send gateway FORBIDDEN", "canvas.hide operator ok"], "\(seen)")
        #expect(records.allSatisfy { $0["nodeId"] == .string(stack.nodeID) && $0["name"] == "phone" })
        #expect((records.first?["resultBytes"]?.numberValue ?? 0) > 0, "the snapshot's size, not its bytes")

        let filtered = try stack.cli(["activity", "--json", "--command", "canvas.*"])
        #expect(try JSONDecoder().decode([JSONValue].self, from: Data(filtered.stdout.utf8)).count == 2)
        let table = try stack.cli(["activity"])
        #expect(table.stdout.contains("ASKED BY") && table.stdout.contains("FORBIDDEN"), "\(table)")
        // Per node: the last hour and day, and what did not end ok.
        let counts = try JSONDecoder().decode([JSONValue].self, from: Data(stack.cli(["activity", "--counts", "--json"]).stdout.utf8))
        #expect(counts.count == 1 && counts.first?["lastHour"] == 3 && counts.first?["lastDay"] == 3 && counts.first?["notOkLastDay"] == 1, "\(counts)")
    }

    @Test func withoutADaemonItSaysWhere() throws {
        let state = TemporaryDirectory("bridge")
        let run = try CLI.run(["activity", "--state-dir", state.path])
        #expect(run.status == 69 && run.stderr.contains("not running"), "\(run)")
    }
}
