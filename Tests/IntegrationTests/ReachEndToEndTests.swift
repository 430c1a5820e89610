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
            return (
                lan,
                try BridgeDaemon(
                    arguments: ["--listen", TestLAN.tailnetBridgeAddress], launcher: lan.launcher(lan.host),
                    bind: TestLAN.bridgeAddress)
            )
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
            try ChildProcess(
                URL(fileURLWithPath: "/usr/sbin/ip"),
                [
                    "netns", "exec", lan.phone, "env", "PYTHONPATH=\(Repository.url("sdk/python").path)", Python.executable, "-u",
                    Repository.url("examples/python-node/lanbridge_example_node.py").path, "--state-dir", state.path,
                ] + arguments,
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

    /// `lanbridge discover records --json` as dnsmasq.conf lines: what an operator would put in a
    /// zone (in a config file, where dnsmasq reads quoted TXT strings).
    static func dnsmasqConfig(_ records: [[String: String]], domain: String) -> String {
        func bare(_ name: String) -> String { name.hasSuffix(".") ? String(name.dropLast()) : name }
        var options = ["local=/\(domain)/"]
        for record in records {
            guard let name = record["name"].map(bare), let type = record["type"], let data = record["data"] else { continue }
            switch type {
            case "PTR": options.append("ptr-record=\(name),\(bare(data))")
            case "SRV":
                let fields = data.split(separator: " ")  // priority weight port target
                options.append("srv-host=\(name),\(bare(String(fields[3]))),\(fields[2]),\(fields[0]),\(fields[1])")
            case "TXT": options.append("txt-record=\(name),\(data.replacingOccurrences(of: "\" \"", with: "\",\""))")
            case "A", "AAAA": options.append("host-record=\(name),\(data)")
            default: break
            }
        }
        return options.joined(separator: "\n") + "\n"
    }

    /// Wide-area DNS-SD (RFC 6763 §11): the operator puts `discover records` in a zone served by a
    /// real DNS server (dnsmasq) on the tailnet; a phone that never saw the LAN browses that domain
    /// over unicast DNS, finds the bridge's tailnet address, and pairs. Node-sim (the Swift SDK's
    /// resolver) and the Python example (dnspython) both.
    @Test func aNodeOffTheLANFindsTheBridgeInAUnicastDNSZone() throws {
        let (lan, bridge) = try twoWayBridge()
        defer { bridge.stop(); lan.tearDown() }
        let domain = "lanbridge.test", tailnetAddress = "\(TestLAN.tailnetBridgeAddress):\(bridge.port)"
        let printed = try CLI.run(["discover", "records", "--domain", domain, "--host", TestLAN.tailnetBridgeAddress, "--json", "--state-dir", bridge.state.path])
        let records = try JSONDecoder().decode([[String: String]].self, from: Data(printed.stdout.utf8))
        let zoneDirectory = TemporaryDirectory("zone")
        let zone = zoneDirectory.file("dnsmasq.conf")
        try Self.dnsmasqConfig(records, domain: domain).write(to: zone, atomically: true, encoding: .utf8)
        try lan.startDNS(["--conf-file=\(zone.path)", "--listen-address=\(TestLAN.tailnetBridgeAddress)"])
        // The operator checks the zone from the bridge host, as a node would browse it.
        let listed = try CLI.run(["discover", "browse", "--domain", domain, "--resolver", TestLAN.tailnetBridgeAddress, "--json"], launcher: lan.launcher(lan.host))
        let bridges = try JSONDecoder().decode([DiscoveredBridge].self, from: Data(listed.stdout.utf8))
        #expect(bridges.map { $0.name } == ["test-bridge.\(domain)"] && bridges.first?.addresses == [TestLAN.tailnetBridgeAddress], "\(listed)")
        try lan.movePhoneToTailnet()
        let identity = try JSONDecoder().decode([String: JSONValue].self, from: Data(try CLI.run(["identity", "--json", "--state-dir", bridge.state.path]).stdout.utf8))
        let short = String(try #require(identity["fingerprint"]?.stringValue).prefix(9))

        let node = try SimulatedNode(
            arguments: ["--domain", domain, "--resolver", TestLAN.tailnetBridgeAddress, "--name", "phone"],
            launcher: lan.launcher(lan.phone))
        #expect(try node.waitFor("found") == "1 test-bridge.\(domain) \(tailnetAddress) id=\(short)", "\(lan.dnsLog)")
        try node.pair(with: bridge)
        #expect(via(try node.waitFor("via")).address == tailnetAddress)
        node.stop()

        let state = TemporaryDirectory("python-node")
        let python = try ChildProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            [
                "netns", "exec", lan.phone, "env", "PYTHONPATH=\(Repository.url("sdk/python").path)", Python.executable, "-u",
                Repository.url("examples/python-node/lanbridge_example_node.py").path, "--state-dir", state.path,
                "--domain", domain, "--resolver", TestLAN.tailnetBridgeAddress, "--name", "Python phone",
            ], mergeStandardError: true)
        defer { python.killIfRunning() }
        #expect(try python.waitForLine(timeout: 30) { $0.hasPrefix("found ") } == "found test-bridge.\(domain) \(tailnetAddress)")
        let code = try python.waitForLine(timeout: 30) { $0.hasPrefix("code ") }.split(separator: " ")
        #expect(try CLI.run(["nodes", "approve", String(code[3]), "--code", String(code[1]), "--state-dir", bridge.state.path]).status == 0)
        #expect(try python.waitForLine(timeout: 30) { $0.hasPrefix("via ") } == "via \(tailnetAddress)")
        #expect(lan.dnsLog.contains("query[PTR] _lanbridge._tcp.\(domain)"), "both asked the server: \(lan.dnsLog)")
    }

    @Test func listenersAreCheckedTogetherBeforeAnythingStarts() throws {
        let state = TemporaryDirectory("bridge")
        let both = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--listen", "lan", "--listen", "127.0.0.1"])
        #expect(both.status == 64 && both.stderr.contains("lan already listens on every address"), "\(both)")
        let twice = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--listen", "127.0.0.1", "--listen", "lo"])
        #expect(twice.status == 64 && twice.stderr.contains("already listed"), "\(twice)")
        // A listener that cannot bind stops the start; the one bound before it is closed again.
        let taken = try CLI.run([
            "serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--no-ui", "--port", "0",
            "--listen", "127.0.0.1", "--listen", "192.0.2.1",
        ])
        #expect(taken.status != 0 && taken.stderr.contains("192.0.2.1"), "\(taken)")
    }

    /// Issue 61 §5: the bridge host's address moves (a DHCP renewal: one removed, another added)
    /// under a running bridge. Within a few seconds the reachable list follows (log, runtime.json,
    /// invites), and a device pairs with a new invite at the new address, with no restart.
    @Test func whenTheHostsAddressMovesInvitesAndWelcomeFollowIt() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        let bridge = try BridgeDaemon(launcher: lan.launcher(lan.host), bind: "lan")
        defer { bridge.stop() }
        #expect(try invite(bridge).hasPrefix("lanbridge://\(TestLAN.bridgeAddress):\(bridge.port)/"))
        let moved = "10.77.0.9"
        #expect(ChildProcess.exitStatus("/usr/sbin/ip", ["-n", lan.host, "addr", "del", "\(TestLAN.bridgeAddress)/24", "dev", "vb"]) == 0)
        #expect(ChildProcess.exitStatus("/usr/sbin/ip", ["-n", lan.host, "addr", "add", "\(moved)/24", "dev", "vb"]) == 0)
        let line = try bridge.waitForLog("the host's addresses changed", within: 30)
        #expect(line.contains("\(moved):\(bridge.port)") && !line.contains("dial \(TestLAN.bridgeAddress)"), "\(line)")
        try bridge.waitForRuntime("the new address") { $0.reachable == ["\(moved):\(bridge.port)"] }
        let uri = try invite(bridge)
        #expect(uri.hasPrefix("lanbridge://\(moved):\(bridge.port)/"), "\(uri)")
        let node = try SimulatedNode(arguments: ["--invite", uri], launcher: lan.launcher(lan.phone))
        try node.waitFor("connected")
    }
}
