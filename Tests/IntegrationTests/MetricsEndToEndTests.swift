import Foundation
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeStores
import Testing
import TestSupport
#if canImport(Glibc)
    import Glibc
#endif

/// The monitoring endpoint of a real daemon, scraped while real invokes and refusals happen.
@Suite(.serialized)
struct MetricsEndToEndTests {
    /// `/metrics` as `series → value` (series with their labels, as written).
    func scrape(_ port: Int) throws -> [String: Double] {
        let response = try HTTPClient.request("GET", port: port, path: "/metrics")
        #expect(response.status == 200)
        var values: [String: Double] = [:]
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// Scrapes until `predicate` holds (the daemon counts on its own threads); a hang guard, not a timing claim.
    func scrape(_ port: Int, until predicate: ([String: Double]) -> Bool) throws -> [String: Double] {
        let deadline = Date().addingTimeInterval(30)
        var last = try scrape(port)
        while !predicate(last), Date() < deadline {
            usleep(20_000)
            last = try scrape(port)
        }
        return last
    }

    /// A TCP connection to the bridge that never starts its handshake.
    func silentConnection(to port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        return fd
    }

    @Test func countersMoveWithInvokesAndRefusalsAndHealthFollowsTheGatewayLink() throws {
        let stack = try RelayStack(config: #"{"admission": {"maxUnauthenticatedPerAddress": 1}}"#, bridgeArguments: ["--metrics-listen", "127.0.0.1:0"])
        defer { stack.stop() }
        let port = try #require(stack.bridge.metricsPort)

        let health = try HTTPClient.request("GET", port: port, path: "/healthz")
        #expect(health.status == 200 && String(decoding: health.body, as: UTF8.self) == "ok\n")
        let before = try scrape(port)
        #expect(before["lanbridge_nodes_paired"] == 1 && before["lanbridge_nodes_connected"] == 1 && before["lanbridge_nodes_foreground"] == 1)
        #expect(before["lanbridge_gateway_link_up"] == 1)
        // The relay loop's lag, sampled every 250 ms from the loop itself (issue 21).
        #expect(before["lanbridge_loop_lag_seconds"].map { $0 >= 0 } == true, "\(before.keys.filter { $0.contains("loop") })")
        // The allocator's account (issue 53 §5): bytes in use, and what it holds free.
        #expect(before["lanbridge_heap_bytes{kind=\"in_use\"}"] ?? 0 > 1_048_576, "\(before.keys.filter { $0.contains("heap") })")
        #expect(before["lanbridge_heap_bytes{kind=\"free\"}"] != nil && before["lanbridge_heap_bytes{kind=\"mapped\"}"] != nil)
        #expect(before["lanbridge_handshakes_total{outcome=\"completed\"}"] ?? 0 >= 1)

        for _ in 0..<2 { #expect(try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://example.com"]).ok) }
        #expect(try stack.gateway.invoke(stack.nodeID, "system.info").code == ErrorMessage.forbidden)
        let after = try scrape(port)
        #expect(after["lanbridge_invokes_total{family=\"canvas\",outcome=\"ok\"}"] == 2, "\(after.filter { $0.key.hasPrefix("lanbridge_invokes") })")
        #expect(after["lanbridge_invokes_total{family=\"system\",outcome=\"FORBIDDEN\"}"] == 1)
        #expect(after["lanbridge_invoke_duration_seconds_count{family=\"canvas\"}"] == 2)
        #expect(after["lanbridge_relayed_bytes_total{direction=\"to_gateway\"}"] ?? 0 > 0)
        #expect(after["lanbridge_relayed_bytes_total{direction=\"to_node\"}"] ?? 0 > 0)
        #expect(after["lanbridge_audit_appends_total"] ?? 0 >= 1, "the denial was audited")

        // Two silent connections from one address, with a per-address cap of one: the second is refused.
        let first = silentConnection(to: stack.bridge.port), second = silentConnection(to: stack.bridge.port)
        defer { close(first); close(second) }
        try stack.bridge.waitForLog("refused connection")  // logged after it is counted
        let refused = try scrape(port)
        #expect(refused["lanbridge_admission_refusals_total{reason=\"over_the_per_address_cap\"}"] == 1)

        // The gateway goes away: health says why, the gauge drops.
        stack.gateway.kill()
        try stack.bridge.waitForLog("gateway link down")
        // The link's own loop logs that; the driver may learn it a moment later: wait on the gauge.
        let down = try scrape(port) { $0["lanbridge_gateway_link_up"] == 0 }
        #expect(down["lanbridge_gateway_link_up"] == 0)
        let unhealthy = try HTTPClient.request("GET", port: port, path: "/healthz")
        #expect(unhealthy.status == 503 && String(decoding: unhealthy.body, as: UTF8.self).contains("gateway link down"))
        #expect(try HTTPClient.request("GET", port: port, path: "/nothing").status == 404)
        #expect(try HTTPClient.request("POST", port: port, path: "/metrics").status == 405)
        // DNS rebinding: a page whose own name points at 127.0.0.1 sends that name.
        #expect(try HTTPClient.request("GET", port: port, path: "/metrics", host: "rebound.example:\(port)").status == 421)
        #expect(try HTTPClient.request("GET", port: port, path: "/metrics", host: "localhost:\(port)").status == 200)
    }

    /// Issue 50 §5: the daemon's own pairing entries (a request filed, its code set) are counted
    /// too, not only the core's denials: the counter is the number of lines the daemon wrote.
    @Test func auditAppendsCountTheDaemonsOwnPairingEntries() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway", "--metrics-listen", "127.0.0.1:0"])
        let port = try #require(bridge.metricsPort)
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Ada's phone"])
        try node.waitFor("code")
        let written = try AuditLog(directory: StateDirectory(url: bridge.state.url)).entries().filter { $0.actor == "bridge" }
        #expect(!written.isEmpty)
        let counted = try scrape(port) { ($0["lanbridge_audit_appends_total"] ?? 0) >= Double(written.count) }
        #expect(counted["lanbridge_audit_appends_total"] == Double(written.count), "\(written.map(\.event))")
        bridge.stop()
    }

    @Test func aNonLoopbackMetricsAddressIsRefused() throws {
        let state = TemporaryDirectory("bridge")
        let flag = try CLI.run([
            "serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0",
            "--metrics-listen", "0.0.0.0:0",
        ])
        #expect(flag.status == 64 && flag.stderr.contains("not a loopback address"), "\(flag.stderr)")
        try Data(#"{"metrics": {"listen": "192.0.2.1:9100"}}"#.utf8).write(to: state.file("config.json"))
        let config = try CLI.run(["serve", "--state-dir", state.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0"])
        #expect(config.status == 78 && config.stderr.contains("metrics.listen"), "\(config.stderr)")
    }
}
