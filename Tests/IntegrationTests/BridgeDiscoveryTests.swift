import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// mDNS end to end on an isolated LAN of network namespaces: real avahi-daemon, real bridges, and an
/// independent mDNS stack (python-zeroconf) on the "phone". One suite, serialized: a machine can run
/// only one avahi-daemon.
@Suite(.serialized, .enabled(if: TestLAN.unavailableReason == nil, Comment(rawValue: TestLAN.unavailableReason ?? "")))
struct BridgeDiscoveryTests {
    struct PeerEvent: Decodable { let event: String; let name: String; let port: Int?; let txt: [String: String]? }

    /// Waits for the zeroconf peer to report `event` for `name`.
    @discardableResult
    func peer(_ browser: ChildProcess, _ event: String, _ name: String, timeout: TimeInterval = 30) throws -> PeerEvent {
        let line = try browser.waitForLine(timeout: timeout) { line in
            (try? JSONDecoder().decode(PeerEvent.self, from: Data(line.utf8))).map { $0.event == event && $0.name == name } ?? false
        }
        return try JSONDecoder().decode(PeerEvent.self, from: Data(line.utf8))
    }

    @Test func anIndependentPeerSeesTheServiceWithItsPortAndTXT() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        try lan.startAvahi()
        let browser = try lan.browser()
        _ = try browser.waitForLine { $0 == "browsing" }
        let bridge = try BridgeDaemon(mdns: true, launcher: lan.launcher(lan.host), bind: "lan", name: "Office bridge")
        defer { bridge.stop() }
        let seen = try peer(browser, "added", "Office bridge")
        #expect(seen.port == bridge.port, "the advertised port is the one listening")
        let fingerprint = try CLI.json(BridgeEndToEndTests.Identity.self, ["identity", "--state-dir", bridge.state.path]).fingerprint
        #expect(seen.txt == ["txtvers": "1", "pv": "1-1", "id": String(fingerprint.prefix(9)), "name": "Office bridge"])
    }

    /// Issue 38: with the door for OpenClaw's apps open, the bridge is also `_openclaw-gw._tcp`,
    /// with the TXT keys the apps read (src/infra/bonjour.ts:152-210): iOS needs gatewayTls=1.
    @Test func openClawsAppsFindTheDoorAsAGatewayWithItsCertificate() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        try lan.startAvahi()
        let browser = try lan.browser(type: "_openclaw-gw._tcp")
        _ = try browser.waitForLine { $0 == "browsing" }
        let bridge = try BridgeDaemon(
            arguments: ["--openclaw-apps", "--openclaw-apps-listen", "0", "--no-gateway"], mdns: true,
            launcher: lan.launcher(lan.host), bind: "lan", name: "Office bridge")
        defer { bridge.stop() }
        let line = try bridge.waitForLog("OpenClaw apps door listening")
        let seen = try peer(browser, "added", "Office bridge")
        let sha = line.split(separator: " ").first { $0.hasPrefix("sha256=") }.map { String($0.dropFirst("sha256=".count)) }
        #expect(seen.txt?["gatewayTls"] == "1" && seen.txt?["gatewayTlsSha256"] == sha && seen.txt?["role"] == "gateway", "\(seen)")
        #expect(seen.txt?["gatewayPort"] == seen.port.map(String.init) && seen.txt?["displayName"] == "Office bridge", "\(seen)")
        #expect(line.contains(":\(seen.port ?? -1)"), "the advertised port is the door's: \(line)")
        // Issue 48 §4: a rotated certificate is announced at once, as the apps read it.
        let rotated = try CLI.run(["canvas", "rotate-cert", "--json", "--state-dir", bridge.state.path])
        let new = try JSONDecoder().decode(JSONValue.self, from: Data(rotated.stdout.utf8))["tlsSha256"]?.stringValue
        #expect(rotated.status == 0 && new != nil && new != sha, "\(rotated)")
        let line2 = try browser.waitForLine(timeout: 30) { line in
            (try? JSONDecoder().decode(PeerEvent.self, from: Data(line.utf8))).map { $0.event == "updated" && $0.txt?["gatewayTlsSha256"] == new } ?? false
        }
        #expect(line2.contains("Office bridge"), "\(line2)")
    }

    @Test func theServiceReturnsWhenAvahiRestartsAndGoesOnSIGTERM() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        try lan.startAvahi()
        let browser = try lan.browser()
        _ = try browser.waitForLine { $0 == "browsing" }
        let bridge = try BridgeDaemon(mdns: true, launcher: lan.launcher(lan.host), bind: "lan", name: "restart-test")
        try peer(browser, "added", "restart-test")

        lan.stopAvahi()  // the bridge keeps serving, and keeps waiting for avahi
        try peer(browser, "removed", "restart-test")
        try lan.startAvahi()
        try peer(browser, "added", "restart-test")  // back with no restart of lanbridge
        try bridge.waitForLog("avahi-daemon went away")

        bridge.stop()  // SIGTERM: the service is withdrawn, so peers see it go now rather than at TTL
        try peer(browser, "removed", "restart-test", timeout: 10)
    }

    @Test func aTakenNameIsReplacedByAnAlternative() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        try lan.startAvahi()
        let competitor = try lan.competitor(named: "Kitchen")
        _ = try competitor.waitForLine { $0 == "published Kitchen" }
        let browser = try lan.browser()
        _ = try browser.waitForLine { $0 == "browsing" }
        // Bound to one address: advertised on that interface only.
        let bridge = try BridgeDaemon(mdns: true, launcher: lan.launcher(lan.host), bind: TestLAN.bridgeAddress, name: "Kitchen")
        defer { bridge.stop() }
        let renamed = try bridge.waitForLog("advertising as")
        #expect(renamed.contains("Kitchen #2"), "\(renamed)")
        let seen = try peer(browser, "added", "Kitchen #2")
        #expect(seen.port == bridge.port)
        // doctor reads runtime.json, written a moment after the log line: wait for the file itself.
        try bridge.waitForRuntime("the name advertised") { $0.mdnsName == "Kitchen #2" }
        #expect(try doctor(bridge).contains("advertised as \"Kitchen #2\""))
    }

    @Test func aNodeFindsTheBridgeByDiscoveryAndPairsWithNoAddressTyped() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        try lan.startAvahi()
        let bridge = try BridgeDaemon(mdns: true, launcher: lan.launcher(lan.host), bind: "lan", name: "Found me")
        defer { bridge.stop() }
        try bridge.waitForLog("advertised on mDNS")
        // `lanbridge discover` from the phone host lists it.
        let listed = try CLI.run(["discover", "--timeout", "2s"], launcher: lan.launcher(lan.phone))
        #expect(listed.stdout.contains("Found me") && listed.stdout.contains(TestLAN.bridgeAddress), "\(listed)")
        // And the node, on the phone host, connects over the veth to the address it discovered.
        let node = try SimulatedNode(arguments: ["--discover"], launcher: lan.launcher(lan.phone))
        #expect(try node.waitFor("connecting") == "Found me")
        let code = try node.waitFor("code").split(separator: " ")
        #expect(try CLI.run(["nodes", "approve", String(code[2]), "--code", String(code[0]), "--state-dir", bridge.state.path]).status == 0)
        try node.waitFor("connected")
        try bridge.waitForLog("peer=\(TestLAN.phoneAddress)")
        node.stop()
    }

    @Test func withoutAvahiTheBridgeStillServesAndSaysHowToFixIt() throws {
        let lan = try TestLAN()
        defer { lan.tearDown() }
        // No avahi-daemon started on this LAN.
        let bridge = try BridgeDaemon(mdns: true, launcher: lan.launcher(lan.host), bind: "lan", name: "lonely")
        defer { bridge.stop() }
        let warning = try bridge.waitForLog("avahi-daemon is not reachable")
        #expect(warning.contains("apt-get install avahi-daemon"))
        let node = try SimulatedNode(arguments: ["--connect", "\(TestLAN.bridgeAddress):\(bridge.port)"], launcher: lan.launcher(lan.phone))
        try node.waitFor("code")  // connecting by address works
        // CI failed here once: doctor read runtime.json before the daemon had written the state it logged.
        try bridge.waitForRuntime("mDNS waiting for avahi-daemon") { $0.mdns?.contains("waiting for avahi-daemon") == true }
        let report = try doctor(bridge)
        #expect(report.contains("FAIL avahi-daemon") && report.contains("waiting for avahi-daemon"), "\(report)")
        node.stop()
    }

    private func doctor(_ bridge: BridgeDaemon) throws -> String {
        try CLI.run(["doctor", "--state-dir", bridge.state.path]).stdout
    }
}
