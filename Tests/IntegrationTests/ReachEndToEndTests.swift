import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// More than one way to the bridge (issue 25), with real namespaces: a bridge host that listens
/// on its LAN and on a tailnet address, and a phone that pairs on the LAN, leaves it, and finds
/// the bridge again through the address it learned, without pairing again.
@Suite(.serialized, .enabled(if: geteuid() == 0, "network namespaces need root (CI runs as root)"))
struct ReachEndToEndTests {
    /// `lanbridge invite --json` on that bridge: its URI.
    private func invite(_ bridge: BridgeDaemon) throws -> String {
        let issued = try CLI.run(["invite", "--state-dir", bridge.state.path, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(issued.stdout.utf8)) as? [String: Any]
        return try #require(object?["uri"] as? String, "\(issued)")
    }

    private func pin(_ state: TemporaryDirectory) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: state.file("bridge.json"))) as? [String: Any])
    }

    /// "via HOST:PORT in N ms" → (HOST:PORT, N).
    private func via(_ line: String) -> (address: String, ms: Int) {
        let words = line.split(separator: " ")
        return (String(words.first ?? ""), Int(words.dropFirst(2).first ?? "") ?? -1)
    }

    /// The test LAN with a tailnet beside it, and a bridge host that listens on both.
    private func twoWayBridge() throws -> (TestLAN, BridgeDaemon) {
        let lan = try TestLAN()
        do {
            try lan.addTailnet()
            return (lan, try BridgeDaemon(arguments: ["--listen", TestLAN.tailnetBridgeAddress], launcher: lan.launcher(lan.host),
                                          bind: TestLAN.bridgeAddress))
        } catch {
            lan.tearDown()
            throw error
        }
    }

    @Test func aNodeThatLeavesTheLANReconnectsThroughTheTailnetAddressWithoutPairingAgain() throws {
        let (lan, bridge) = try twoWayBridge()
        defer { bridge.stop(); lan.tearDown() }
        let (lanAddress, tailnetAddress) = ("\(TestLAN.bridgeAddress):\(bridge.port)", "\(TestLAN.tailnetBridgeAddress):\(bridge.port)")

        // The invite lists both listeners, the LAN first; so does runtime.json.
        let uri = try invite(bridge)
        #expect(uri.hasPrefix("lanbridge://\(lanAddress)/invite?") && uri.contains("&a=\(tailnetAddress)"), "\(uri)")
        let parsed = try #require(InviteURI(uri))
        #expect(parsed.addresses.map { $0.description } == [lanAddress, tailnetAddress])

        // Pairs by invite on the LAN, and learns the list from the bridge.
        let node = try SimulatedNode(arguments: ["--invite", uri], launcher: lan.launcher(lan.phone))
        let id = try node.waitFor("node")
        try node.waitFor("paired")
        try node.waitFor("connected")
        #expect(via(try node.waitFor("via")).address == lanAddress)
        node.stop()
        #expect(try pin(node.state)["addresses"] as? [String] == [lanAddress, tailnetAddress])

        // Off the LAN: SYNs to it vanish. The node starts with what it learned.
        try lan.movePhoneToTailnet()
        let moved = try SimulatedNode(state: node.state, launcher: lan.launcher(lan.phone))
        #expect(try moved.waitFor("node") == id)
        let line = try moved.waitFor("connected")
        let reconnect = via(try moved.waitFor("via"))
        #expect(line == "test-bridge" && reconnect.address == tailnetAddress, "\(line) \(reconnect)")
        print("fallback reconnect (last address unreachable, tailnet second): \(reconnect.ms) ms from start to connected")
        try bridge.waitForLog("peer=\(TestLAN.tailnetPhoneAddress)")
        // It remembers where it worked, so the next start tries the tailnet first; no pairing again.
        #expect(try pin(moved.state)["host"] as? String == TestLAN.tailnetBridgeAddress)
        let nodes = try CLI.run(["nodes", "list", "--json", "--state-dir", bridge.state.path])
        let pairings = nodes.stdout.components(separatedBy: "\"nodeId\"").count - 1
        #expect(pairings == 1, "one pairing: \(nodes.stdout)")
        moved.stop()
    }

    @Test func thePythonNodeFollowsTheSameList() throws {
        let (lan, bridge) = try twoWayBridge()
        defer { bridge.stop(); lan.tearDown() }
        let tailnetAddress = "\(TestLAN.tailnetBridgeAddress):\(bridge.port)"
        let state = TemporaryDirectory("python-node")
        func python(_ arguments: [String]) throws -> ChildProcess {
            try ChildProcess(URL(fileURLWithPath: "/usr/sbin/ip"),
                             ["netns", "exec", lan.phone, "env", "PYTHONPATH=\(Repository.url("pairing/python").path)", Python.executable, "-u",
                              Repository.url("examples/python-node/lanbridge_example_node.py").path, "--state-dir", state.path] + arguments,
                             mergeStandardError: true)
        }
        let first = try python(["--invite", try invite(bridge), "--name", "Python node"])
        defer { first.killIfRunning() }
        _ = try first.waitForLine(timeout: 30) { $0.hasPrefix("paired ") }
        #expect(try first.waitForLine(timeout: 30) { $0.hasPrefix("via ") } == "via \(TestLAN.bridgeAddress):\(bridge.port)")
        first.killIfRunning()  // the test runner's children inherit SIGTERM blocked; Python keeps it so

        try lan.movePhoneToTailnet()
        let moved = try python([])
        defer { moved.killIfRunning() }
        #expect(try moved.waitForLine(timeout: 30) { $0.hasPrefix("via ") } == "via \(tailnetAddress)")
        try bridge.waitForLog("peer=\(TestLAN.tailnetPhoneAddress)")
    }

    @Test func listenersAreCheckedTogetherBeforeAnythingStarts() throws {
        let state = TemporaryDirectory("bridge")
        let both = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--listen", "lan", "--listen", "127.0.0.1"])
        #expect(both.status == 64 && both.stderr.contains("lan already listens on every address"), "\(both)")
        let twice = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--listen", "127.0.0.1", "--listen", "lo"])
        #expect(twice.status == 64 && twice.stderr.contains("already listed"), "\(twice)")
        // A listener that cannot bind stops the start; the one bound before it is closed again.
        let taken = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--port", "0",
                                 "--listen", "127.0.0.1", "--listen", "192.0.2.1"])
        #expect(taken.status != 0 && taken.stderr.contains("192.0.2.1"), "\(taken)")
    }
}
