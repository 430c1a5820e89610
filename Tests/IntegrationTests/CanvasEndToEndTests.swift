import Foundation
import LanbridgeProtocol
import LanbridgeState
import Testing
import TestSupport

/// Issue 37: the agent's canvas through the bridge. A real `lanbridge serve` relays the OpenClaw
/// gateway simulator's canvas host (python/openclaw_canvas.py, which follows upstream's capability
/// rules) to a paired node-sim, which learns the relay's URL and pin in its welcome; a Python
/// client stands in for the node's webview, checking the pin (the Python SDK's helper).
@Suite(.enabled(if: Python.hasModule("websockets") && Python.hasModule("cryptography"), "needs Python's websockets and cryptography (scripts/setup installs them)"))
struct CanvasEndToEndTests {
    static let client = Repository.url("Tests/IntegrationTests/python/canvas_client.py").path

    struct Canvas {
        let url: String
        let sha256: String
        var capability: String { String(url.split(separator: "/").last ?? "") }
        var origin: String { url.components(separatedBy: "/__openclaw__/")[0] }
    }

    /// Gateway sim, bridge (canvas relay on an ephemeral loopback port), one paired node.
    struct Stack {
        let gateway: OpenClawGatewaySim
        let bridge: BridgeDaemon
        let node: SimulatedNode
        let nodeID: String
        let device: String
        let canvas: Canvas

        init(config: String? = nil) throws {
            gateway = try OpenClawGatewaySim()
            let state = TemporaryDirectory("bridge")
            if let config { try Data(config.utf8).write(to: state.url.appendingPathComponent("config.json")) }
            bridge = try BridgeDaemon(state: state, arguments: gateway.bridgeArguments + ["--canvas-listen", "0"])
            node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"])
            nodeID = try node.pair(with: bridge)
            let words = try node.waitFor("canvas").split(separator: " ").map(String.init)
            canvas = Canvas(url: words[0], sha256: words[1])
            device = try gateway.waitFor("paired")[0]
            try gateway.waitFor("connected")
        }
    }

    /// Runs the webview stand-in; its output lines.
    static func webview(_ arguments: [String]) throws -> [String] {
        let child = try ChildProcess(URL(fileURLWithPath: Python.executable), [client] + arguments, mergeStandardError: true)
        var lines: [String] = []
        while let line = try child.nextLine() { lines.append(line) }
        return lines
    }

    static func fetch(_ url: String, _ pin: String, method: String = "GET") throws -> (status: Int, bytes: Int, body: String, all: [String]) {
        let lines = try webview(["fetch", url, pin, method])
        guard let first = lines.first(where: { $0.hasPrefix("status ") })?.split(separator: " "), first.count >= 4 else {
            throw Failure(description: "no answer: \(lines)")
        }
        let body = lines.first { $0.hasPrefix("body ") }.flatMap { try? JSONDecoder().decode(String.self, from: Data($0.dropFirst(5).utf8)) } ?? ""
        return (Int(first[1]) ?? 0, Int(first[3]) ?? 0, body, lines)
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    @Test func aPairedNodeLoadsTheA2UIPageThroughTheRelayAndTheGatewaysCapabilityNeverReachesTheLAN() throws {
        let stack = try Stack()
        #expect(stack.canvas.url.hasPrefix("https://127.0.0.1:") && stack.canvas.url.contains("/__openclaw__/cap/"), "\(stack.canvas.url)")
        #expect(stack.canvas.capability.utf8.count == 24 && stack.canvas.sha256.utf8.count == 64)
        // status shows the certificate the node was told to pin.
        let status = try CLI.run(["status", "--json", "--state-dir", stack.bridge.state.path])
        #expect(status.stdout.contains(stack.canvas.sha256), "\(status.stdout)")
        let doctor = try CLI.run(["doctor", "--state-dir", stack.bridge.state.path])
        #expect(doctor.stdout.contains("ok   canvas relay: https://") && doctor.stdout.contains(stack.canvas.sha256), "\(doctor.stdout)")

        let page = try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256)
        #expect(page.status == 200 && page.body.contains("A2UI host"), "\(page.all)")
        let asset = try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/a2ui.bundle.js", stack.canvas.sha256)
        #expect(asset.status == 200 && asset.body.contains("openclawA2UI"), "\(asset.all)")
        // What reached the gateway carried the gateway's own capability, not the node's.
        let served = try stack.gateway.waitFor("canvas 200")
        #expect(served[0].hasPrefix("/__openclaw__/cap/") && !served[0].contains(stack.canvas.capability), "\(served)")
        let upstreamCapability = served[0].split(separator: "/")[2]
        // A page that prints its URL, and a redirect that names the capability: the LAN sees the node's.
        let echo = try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/echo", stack.canvas.sha256)
        #expect(echo.status == 200 && echo.body.contains(stack.canvas.capability) && !echo.body.contains(upstreamCapability), "\(echo.all)")
        let redirect = try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/redirect", stack.canvas.sha256)
        #expect(
            redirect.status == 302 && !redirect.all.joined().contains(upstreamCapability) && redirect.all.joined().contains(stack.canvas.capability),
            "\(redirect.all)")
        // A wrong pin is refused by the client before any request goes.
        let wrongPin = try Self.webview(["fetch", stack.canvas.url + "/__openclaw__/a2ui/", String(repeating: "0", count: 64)])
        #expect(wrongPin.joined().contains("PinMismatch") || wrongPin.joined().contains("pinned"), "\(wrongPin)")

        // The agent's A2UI command passes under OpenClaw's spelling.
        let push = try stack.gateway.invoke(stack.device, "canvas.a2ui.pushJSONL", params: #"{"jsonl":"{}\n{}"}"#)
        #expect(push["ok"] == true && push["payloadJSON"]?.stringValue?.contains(#""applied":2"#) == true, "\(push)")
    }

    /// Issue 48 §5, against the simulator's canvas host (upstream's rules: a sliding 10-minute TTL
    /// on the gateway's clock, 401 for a dead capability). The gateway's capability lapsed (as after
    /// a suspend): the first page meets 401 upstream, the relay renews it with
    /// `node.canvas.capability.refresh` and asks once more, and the node gets its page.
    @Test func aLapsedGatewayCapabilityIsRenewedAtTheFirst401AndThePageLoads() throws {
        let stack = try Stack()
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256).status == 200)
        stack.gateway.command("lapse")
        try stack.gateway.waitFor("lapsed")
        let page = try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256)
        #expect(page.status == 200 && page.body.contains("A2UI host"), "\(page.all)")
        let seen = stack.gateway.process.output
        #expect(seen.contains { $0.hasPrefix("canvas 401 ") } && seen.contains { $0.hasPrefix("canvas-refresh ") }, "\(seen.suffix(8))")
    }

    /// The node's own `canvas.refresh` renews the gateway's capability too, before any page meets a 401.
    @Test func theNodesRefreshRenewsTheGatewaysCapabilityToo() throws {
        let stack = try Stack()
        stack.gateway.command("lapse")
        try stack.gateway.waitFor("lapsed")
        stack.node.process.write(line: "canvas-refresh")
        #expect(try stack.node.waitFor("canvas-refresh").hasPrefix("ok"))
        try stack.gateway.waitFor("canvas-refresh")
        let before = stack.gateway.process.output.filter { $0.hasPrefix("canvas 401 ") }.count
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256).status == 200)
        #expect(stack.gateway.process.output.filter { $0.hasPrefix("canvas 401 ") }.count == before, "the refreshed capability needed no retry")
    }

    /// A chunked page with the gateway's capability split across two chunks, and a redirect to the
    /// gateway's own origin: the node sees its own capability and the relay's origin, never the gateway's.
    @Test func aChunkedPageAndAnAbsoluteRedirectShowTheNodeOnlyItsOwnCapabilityAndTheRelay() throws {
        let stack = try Stack()
        let chunked = try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/chunked", stack.canvas.sha256)
        let served = try stack.gateway.waitFor("canvas 200")
        let upstream = String(served[0].split(separator: "/")[2])
        #expect(chunked.status == 200 && chunked.body.contains("\(CanvasRequest.capabilityPrefix)\(stack.canvas.capability)/x"), "\(chunked.all)")
        #expect(!chunked.all.joined().contains(upstream), "the gateway's capability reached the LAN: \(chunked.all)")
        let redirect = try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/absolute-redirect", stack.canvas.sha256)
        let headers = redirect.all.first { $0.hasPrefix("headers ") }.flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.dropFirst(8).utf8)) }
        #expect(redirect.status == 302 && headers?["location"] == stack.canvas.url + "/__openclaw__/canvas/", "\(redirect.all)")
    }

    @Test func theLiveReloadSocketConnectsThroughTheRelay() throws {
        let stack = try Stack()
        let url = stack.canvas.origin + "/__openclaw__/ws?oc_cap=" + stack.canvas.capability
        let live = try ChildProcess(URL(fileURLWithPath: Python.executable), [Self.client, "live", url, stack.canvas.sha256], mergeStandardError: true)
        _ = try live.waitForLine(timeout: 30) { $0 == "open" }
        try stack.gateway.waitFor("livereload")
        stack.gateway.command("reload")
        _ = try live.waitForLine(timeout: 30) { $0 == "message reload" }
        // The node leaves: its capability dies, and its live socket with it.
        stack.node.stop()
        _ = try live.waitForLine(timeout: 30) { $0 == "closed" }
        let after = try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256)
        #expect(after.status == 404, "\(after.all)")
    }

    /// Headless Chromium stands in for the node's webview: it trusts the relay's key only (pinned by
    /// SPKI, after the certificate matched the pin the node got), loads the A2UI page with its
    /// script, and the page's live-reload socket opens through the relay.
    @Test(.enabled(if: ConsoleBrowser.missing == nil, Comment(rawValue: ConsoleBrowser.missing ?? "")))
    func chromiumLoadsThePageWithTheCertificatePinnedAndItsLiveReloadSocketOpens() throws {
        let stack = try Stack()
        let url = stack.canvas.url + "/__openclaw__/a2ui/?platform=android&oc_cap=" + stack.canvas.capability
        let lines = try Self.webview(["browser", url, stack.canvas.sha256])
        #expect(lines.contains("title live") && lines.contains { $0.contains("A2UI host") }, "\(lines)")
        try stack.gateway.waitFor("livereload")
    }

    /// §12 mode: a plain static server on loopback as `canvas.upstream`, no gateway at all.
    @Test func withoutOpenClawAStaticServerOnLoopbackIsTheCanvasHost() throws {
        let root = TemporaryDirectory("canvas-root")
        let pages = root.url.appendingPathComponent("__openclaw__/canvas")
        try FileManager.default.createDirectory(at: pages, withIntermediateDirectories: true)
        try Data("<p>static canvas</p>".utf8).write(to: pages.appendingPathComponent("hello.html"))
        try Data("private".utf8).write(to: root.url.appendingPathComponent("secret.txt"))
        let server = try ChildProcess(
            URL(fileURLWithPath: Python.executable), ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root.path],
            mergeStandardError: true)
        let port = Int(try server.waitForLine(timeout: 30) { $0.contains("Serving HTTP") }.split(separator: " ")[5]) ?? 0
        let state = TemporaryDirectory("bridge")
        try Data(#"{"canvas": {"upstream": "http://127.0.0.1:\#(port)"}}"#.utf8).write(to: state.url.appendingPathComponent("config.json"))
        let bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway", "--canvas-listen", "0"])
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "tablet"])
        try node.pair(with: bridge)
        let words = try node.waitFor("canvas").split(separator: " ").map(String.init)
        let canvas = Canvas(url: words[0], sha256: words[1])
        let page = try Self.fetch(canvas.url + "/__openclaw__/canvas/hello.html", canvas.sha256)
        #expect(page.status == 200 && page.body == "<p>static canvas</p>", "\(page.all)")
        #expect(try Self.fetch(canvas.url + "/__openclaw__/canvas/hello.html", canvas.sha256, method: "HEAD").status == 200)
        for target in ["/__openclaw__/cap/\(canvas.capability)/secret.txt", "/__openclaw__/cap/\(canvas.capability)/__openclaw__/canvas/%2e%2e/%2e%2e/secret.txt"] {
            #expect(try Self.webview(["raw", canvas.origin, canvas.sha256, try jsonString("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")]) == ["status 404"])
        }
        server.killIfRunning()
    }

    /// `canvas rotate-cert`: the certificate is kept across restarts until rotated; a rotation
    /// serves the new one at once and tells the connected node its new pin, capability unchanged.
    @Test func aRotatedCertificateReachesTheConnectedNodeAndTheOldPinNoLongerMatches() throws {
        let stack = try Stack()
        let rotated = try CLI.run(["canvas", "rotate-cert", "--json", "--state-dir", stack.bridge.state.path])
        #expect(rotated.status == 0, "\(rotated)")
        let answer = try JSONDecoder().decode(JSONValue.self, from: Data(rotated.stdout.utf8))
        let words = try stack.node.waitFor("canvas").split(separator: " ").map(String.init)
        #expect(words[0] == stack.canvas.url && words[1] != stack.canvas.sha256 && answer["tlsSha256"] == .string(words[1]), "\(words) \(answer)")
        let old = try Self.webview(["fetch", stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256])
        #expect(old.joined().contains("not the pinned one"), "\(old)")
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", words[1]).status == 200)
        let status = try CLI.run(["status", "--json", "--state-dir", stack.bridge.state.path])
        #expect(status.stdout.contains(words[1]))
    }

    /// What a canvas may load is the config's too, and a reload (SIGHUP) applies it to the next
    /// invoke; the relay's own address waits for a restart, and the log says so.
    @Test func aReloadedOriginRuleAppliesAtOnce() throws {
        let stack = try Stack()
        let refused = try stack.gateway.invoke(stack.device, "canvas.navigate", params: #"{"url":"https://10.1.2.3/"}"#)
        #expect(refused["ok"] == false, "\(refused)")
        try Data(#"{"canvas": {"allowOrigins": ["https://10.1.2.3"], "listen": "18799"}}"#.utf8)
            .write(to: stack.bridge.state.url.appendingPathComponent("config.json"))
        stack.bridge.process.signal(SIGHUP)
        try stack.bridge.waitForLog("apply after a restart (what a canvas may load applies now)")
        let allowed = try stack.gateway.invoke(stack.device, "canvas.navigate", params: #"{"url":"https://10.1.2.3/"}"#)
        #expect(allowed["ok"] == true, "\(allowed)")
    }

    /// A relay address the admin chose that is taken stops the start, with the address named; the
    /// default one only warns (tests and other daemons may hold 18793).
    @Test func aChosenCanvasAddressThatIsTakenStopsTheStart() throws {
        let first = try Stack()
        let port = URLComponents(string: first.canvas.url)?.port ?? 0
        let state = TemporaryDirectory("bridge")
        try Data(#"{"canvas": {"upstream": "http://127.0.0.1:9"}}"#.utf8).write(to: state.url.appendingPathComponent("config.json"))
        let refused = try CLI.run([
            "serve", "--state-dir", state.path, "--bind", "loopback", "--port", "0", "--no-mdns", "--no-ui", "--no-gateway",
            "--canvas-listen", String(port),
        ])
        #expect(refused.status != 0 && (refused.stderr + refused.stdout).contains(String(port)), "\(refused)")
    }

    @Test func afterRevokeTheCapabilityIs404AtOnceAndNothingReachesTheGateway() throws {
        let stack = try Stack()
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256).status == 200)
        let revoke = try CLI.run(["nodes", "revoke", stack.nodeID, "--state-dir", stack.bridge.state.path])
        #expect(revoke.status == 0, "\(revoke)")
        let before = try stack.gateway.canvasRequests()
        let after = try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", stack.canvas.sha256)
        #expect(after.status == 404, "\(after.all)")
        #expect(try stack.gateway.canvasRequests() == before, "the revoked node's request reached the gateway")
    }

    /// Every request that is not a live capability's GET under the canvas paths gets 404 and sends
    /// nothing upstream; a refresh keeps the capability; oversized responses and slow heads are cut.
    @Test func hostileRequestsGet404AndNeverReachTheGateway() throws {
        let stack = try Stack(config: #"{"limits": {"canvasMaxResponseBytes": 1048576, "canvasHeadMs": 2000}}"#)
        let cap = stack.canvas.capability, origin = stack.canvas.origin, pin = stack.canvas.sha256
        let other = String(cap.reversed())
        let targets = [
            "/__openclaw__/a2ui/",  // no capability
            "/__openclaw__/cap/\(other)/__openclaw__/a2ui/",  // a wrong one
            "/__openclaw__/cap/\(cap)/",  // not a canvas path
            "/__openclaw__/cap/\(cap)/v1/models",  // the gateway's own routes
            "/__openclaw__/cap/\(cap)/__openclaw__/a2ui/../../v1/models",
            "/__openclaw__/cap/\(cap)/__openclaw__/a2ui/%2e%2e/%2e%2e/v1/models",
            "/__openclaw__/cap/\(cap)/__openclaw__/a2ui/%2E%2E%2Fsecret",
            "/__openclaw__/cap/\(cap)/__openclaw__/a2ui/..%5c..%5cv1",
            "/__openclaw__/cap/\(cap)/__openclaw__/canvas//etc/passwd",
            "/__openclaw__/cap/\(cap)/__openclaw__/ws",  // the live socket without an upgrade
            "/?oc_cap=\(cap)",
        ]
        for target in targets {
            let lines = try Self.webview(["raw", origin, pin, try jsonString("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")])
            #expect(lines == ["status 404"], "\(target): \(lines)")
        }
        let heads = [
            "POST /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
            "GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "GET http://127.0.0.1/__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\n\r\n",
        ]
        for head in heads {
            let lines = try Self.webview(["raw", origin, pin, try jsonString(head)])
            #expect(lines == ["status 404"], "\(head.debugDescription): \(lines)")
        }
        // None of them reached the canvas host.
        #expect(try stack.gateway.canvasRequests() == 0, "a refused request reached the gateway")
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/", pin).status == 200)
        #expect(try stack.gateway.canvasRequests() == 1)

        // 5 MiB is over this bridge's 1 MiB: cut, and said so.
        let big = try Self.fetch(stack.canvas.url + "/__openclaw__/canvas/big.bin", pin)
        #expect(big.bytes < 5 * 1024 * 1024, "\(big.all)")
        try stack.bridge.waitForLog("canvasMaxResponseBytes")
        // A head that trickles in is cut at canvasHeadMs.
        let slow = try Self.webview(["slow", origin, pin, "0.2"])
        #expect(slow.first?.hasPrefix("closed after") == true, "\(slow)")

        // The node's refresh keeps its capability working.
        stack.node.process.write(line: "canvas-refresh")
        #expect(try stack.node.waitFor("canvas-refresh").hasPrefix("ok"))
        #expect(try Self.fetch(stack.canvas.url + "/__openclaw__/a2ui/", pin).status == 200)
    }

    /// §3: the agent's URLs for the gateway's loopback canvas are rewritten to the node's relay;
    /// a URL on the LAN is refused at the bridge, audited, with the command that would allow it.
    @Test func agentURLsAreRewrittenToTheRelayAndLANURLsAreRefused() throws {
        let stack = try Stack()
        let loopbackCanvas = "http://127.0.0.1:\(stack.gateway.port)/__openclaw__/cap/UPSTREAMcap/__openclaw__/canvas/page.html"
        let navigate = try stack.gateway.invoke(stack.device, "canvas.navigate", params: try jsonObject(["url": loopbackCanvas]))
        #expect(navigate["ok"] == true, "\(navigate)")
        // The node-sim echoes canvas.navigate's params: the URL it got is its relay's.
        if case let .string(text)? = navigate["payloadJSON"] {
            #expect(
                text.contains(stack.canvas.url.replacingOccurrences(of: "/", with: "\\/") + "\\/__openclaw__\\/canvas\\/page.html")
                    || text.contains(stack.canvas.url + "/__openclaw__/canvas/page.html"), "\(text)")
            #expect(!text.contains("UPSTREAMcap") && !text.contains("127.0.0.1:\(stack.gateway.port)"), "\(text)")
        }
        let lan = try stack.gateway.invoke(stack.device, "canvas.navigate", params: #"{"url":"https://192.168.1.1/admin"}"#)
        #expect(lan["ok"] == false, "\(lan)")
        let message = lan["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("https://192.168.1.1") && message.contains("lanbridge nodes allow \(stack.nodeID) https://192.168.1.1"), "\(lan)")
        // Widened for this node, it passes.
        let allowed = try CLI.run(["nodes", "allow", stack.nodeID, "https://192.168.1.1", "--state-dir", stack.bridge.state.path])
        #expect(allowed.status == 0, "\(allowed)")
        #expect(try stack.gateway.invoke(stack.device, "canvas.navigate", params: #"{"url":"https://192.168.1.1/admin"}"#)["ok"] == true)
        let audit = try String(contentsOf: stack.bridge.state.url.appendingPathComponent("audit.jsonl"), encoding: .utf8)
        #expect(audit.contains("CANVAS_URL"), "\(audit)")
    }

    private func jsonString(_ text: String) throws -> String { String(decoding: try JSONEncoder().encode(text), as: UTF8.self) }
    private func jsonObject(_ object: [String: String]) throws -> String { String(decoding: try JSONEncoder().encode(object), as: UTF8.self) }
}

extension OpenClawGatewaySim {
    /// How many requests the canvas host has answered so far (a round trip on its stdin first, so
    /// every line it printed before is in).
    func canvasRequests() throws -> Int {
        command("devices")
        try waitFor("devices")
        return process.output.filter { $0.hasPrefix("canvas ") }.count
    }
}
