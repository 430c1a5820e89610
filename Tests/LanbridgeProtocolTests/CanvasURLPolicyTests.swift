import LanbridgeProtocol
import Testing

/// Issue 37 §3: what a canvas may load, as a table. Each row is a URL an agent could send in
/// `canvas.navigate`, and what the bridge must decide with the default policy.
struct CanvasURLPolicyTests {
    static let relay = "https://192.168.1.10:18793"

    static let table: [(url: String, allowed: Bool)] = [
        // Allowed by default.
        ("https://example.com/", true),
        ("https://example.com", true),
        ("HTTPS://EXAMPLE.COM/Path?q=1#frag", true),
        ("https://example.com./", true),
        ("https://sub.example.co.uk:8443/x", true),
        ("https://93.184.216.34/", true),
        ("https://[2606:2800:220:1:248:1893:25c8:1946]/", true),
        ("https:\\\\example.com\\path", true),
        ("https:///example.com/", true),
        ("about:blank", true),
        ("https://192.168.1.10:18793/__openclaw__/cap/abc/__openclaw__/a2ui/", true),  // the node's relay
        // Schemes.
        ("http://example.com/", false),
        ("file:///etc/passwd", false),
        ("javascript:alert(1)", false),
        ("JaVaScRiPt:alert(1)", false),
        ("data:text/html,<script>alert(1)</script>", false),
        ("about:config", false),
        ("blob:https://example.com/uuid", false),
        ("ftp://example.com/", false),
        ("ws://example.com/", false),
        ("intent://scan/#Intent;scheme=zxing;end", false),
        // Loopback, in its many spellings.
        ("https://127.0.0.1/", false),
        ("https://localhost/", false),
        ("https://LOCALHOST./", false),
        ("https://foo.localhost/", false),
        ("https://2130706433/", false),
        ("https://0x7f000001/", false),
        ("https://0x7f.1/", false),
        ("https://017700000001/", false),
        ("https://127.1/", false),
        ("https://127.0.0.1./", false),
        ("https://%31%32%37.0.0.1/", false),
        ("https://127%2E0%2E0%2E1/", false),
        ("https://[::1]/", false),
        ("https://[0:0:0:0:0:0:0:1]/", false),
        ("https://[::ffff:127.0.0.1]/", false),
        ("https://[::ffff:7f00:1]/", false),
        ("https://[64:ff9b::7f00:1]/", false),
        ("https://0.0.0.0/", false),
        ("https://0/", false),
        // The LAN.
        ("https://192.168.1.1/", false),
        ("https://10.0.0.1:8443/", false),
        ("https://172.16.5.4/", false),
        ("https://172.31.255.255/", false),
        ("https://100.101.102.103/", false),  // a tailnet address
        ("https://169.254.169.254/latest/meta-data/", false),
        ("https://[fe80::1]/", false),
        ("https://[fd12:3456::1]/", false),
        ("https://[::ffff:192.168.1.1]/", false),
        ("https://0xc0a80101/", false),
        ("https://3232235777/", false),
        ("https://printer.local/", false),
        ("https://printer.local./", false),
        ("https://router/", false),
        ("https://nas.home.arpa/", false),
        ("https://[ff02::1]/", false),
        ("https://224.0.0.251/", false),
        // Credentials, and hosts meant to confuse.
        ("https://user:pass@example.com/", false),
        ("https://example.com@127.0.0.1/", false),
        ("https://example.com%40127.0.0.1/", false),
        ("https://127.0.0.1%2F.example.com/", false),
        ("https://exa mple.com/", false),
        ("https://example.com\n/", false),
        ("https://ex%41mple.com/", true),
        ("https://exämple.com/", false),
        ("https://1.2.3.4.5/", false),
        ("https://256.1.1.1/", false),
        ("https://[::1/", false),
        ("https://[1::2::3]/", false),
        ("https://example.com:99999/", false),
        ("https://:443/", false),
        ("//example.com/", false),
        ("", false),
        ("https://example.com:443/", true),
        ("https://172.32.0.1/", true),  // just past 172.16/12
        ("https://11.0.0.1/", true),
        ("https://[2001:db8::1]/", false),
    ]

    @Test func theDefaultPolicyDecidesEveryRowOfTheTable() {
        #expect(Self.table.count >= 40)
        let policy = CanvasURLPolicy()
        for row in Self.table {
            let verdict = policy.decide(row.url, relayOrigin: Self.relay)
            #expect((verdict == .allow) == row.allowed, "\(row.url.debugDescription): \(verdict)")
        }
    }

    @Test func hostsAreReadAsABrowserReadsThem() throws {
        #expect(try CanvasURL("https://0x7f.1/").host == .ipv4(0x7F00_0001))
        #expect(try CanvasURL("https://017700000001/").host == .ipv4(0x7F00_0001))
        #expect(try CanvasURL("https://1.0x10.0377.4/").host == .ipv4(0x0110_FF04))
        #expect(try CanvasURL("https://[::ffff:1.2.3.4]:8080/").host == .ipv6([0, 0, 0, 0, 0, 0xFFFF, 0x0102, 0x0304]))
        #expect(try CanvasURL("https://[::ffff:1.2.3.4]:8080/").port == 8080)
        #expect(try CanvasURL("https://Example.COM./a").origin == "https://example.com")
        #expect(try CanvasURL("http://a.b:80/").origin == "http://a.b")
        #expect(try CanvasURL("https://u@a.b/").hasCredentials)
        #expect(throws: CanvasURL.Invalid.self) { try CanvasURL("https://1.2.3.09/") }  // 09 is no octal
    }

    @Test func rulesWidenAndNarrowAndADenyWins() throws {
        let lanServer = try OriginPattern("http://192.168.1.20:8080")
        let ads = try OriginPattern("https://*.ads.example")
        let global = CanvasURLPolicy(allow: [lanServer], deny: [ads])
        #expect(global.decide("http://192.168.1.20:8080/dash", relayOrigin: nil) == .allow)
        #expect(global.decide("http://192.168.1.20:8081/dash", relayOrigin: nil) != .allow)  // another port
        #expect(global.decide("https://x.ads.example/", relayOrigin: nil) == .refuse(reason: "denied by canvas.denyOrigins", origin: "https://x.ads.example"))
        #expect(global.decide("https://ads.example/", relayOrigin: nil) != .allow)
        #expect(global.decide("https://notads.example/", relayOrigin: nil) == .allow)
        // The node's own deny wins over the config's allow.
        let node = CanvasURLPolicy(deny: [lanServer])
        #expect(global.decide("http://192.168.1.20:8080/", relayOrigin: nil, node: node) == .refuse(reason: "denied for this node", origin: "http://192.168.1.20:8080"))
        // Rules cannot make a non-page scheme loadable, and cannot be written with a path.
        #expect(throws: CanvasURL.Invalid.self) { try OriginPattern("file:///etc") }
        #expect(throws: CanvasURL.Invalid.self) { try OriginPattern("https://example.com/path") }
        #expect(throws: CanvasURL.Invalid.self) { try OriginPattern("https://*.10.0.0.1") }
        #expect(try OriginPattern("HTTPS://*.Example.com:443").description == "https://*.example.com")
        #expect(OriginPattern.isOrigin("https://a.b") && !OriginPattern.isOrigin("canvas.*"))
    }
}
