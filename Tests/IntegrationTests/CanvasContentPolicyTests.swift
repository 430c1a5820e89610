import Foundation
import Testing
import TestSupport

/// Issue 48 §2: a page served through the relay is held to the relay's Content-Security-Policy.
/// Headless Chromium (the node's webview, the relay's key pinned) loads a canvas page that tries
/// to reach a loopback `http:` server by fetch, an image, a frame and a form post; the server,
/// started here, hears none of them. (A page navigating itself, `location = …`, is out of any
/// header's reach: tried here, Chromium followed it under every policy, `sandbox` included. That
/// is why `canvas.eval`, the agent's own script, is a sensitive grant; see docs/security.md.)
@Suite(.enabled(if: ConsoleBrowser.missing == nil, Comment(rawValue: ConsoleBrowser.missing ?? "")))
struct CanvasContentPolicyTests {
    /// A §12 bridge whose canvas host is a static server holding canvas/attack.html, one paired
    /// node, and the LAN stand-in (http_sink.py) the page tries to reach.
    struct Stack {
        let root = TemporaryDirectory("canvas-root")
        let host: ChildProcess
        let sink: ChildProcess
        let sinkPort: Int
        let bridge: BridgeDaemon
        let node: SimulatedNode
        let canvas: CanvasEndToEndTests.Canvas

        init(config: [String: Any] = [:]) throws {
            let pages = root.url.appendingPathComponent("__openclaw__/canvas")
            try FileManager.default.createDirectory(at: pages, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Repository.url("Tests/IntegrationTests/canvas/attack.html"), to: pages.appendingPathComponent("attack.html"))
            host = try ChildProcess(
                URL(fileURLWithPath: Python.executable), ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root.path],
                mergeStandardError: true)
            let hostPort = Int(try host.waitForLine(timeout: 30) { $0.contains("Serving HTTP") }.split(separator: " ")[5]) ?? 0
            sink = try ChildProcess(URL(fileURLWithPath: Python.executable), [Repository.url("Tests/IntegrationTests/python/http_sink.py").path])
            sinkPort = Int(try sink.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count)) ?? 0
            var canvasConfig = config
            canvasConfig["upstream"] = "http://127.0.0.1:\(hostPort)"
            let state = TemporaryDirectory("bridge")
            try JSONSerialization.data(withJSONObject: ["canvas": canvasConfig]).write(to: state.url.appendingPathComponent("config.json"))
            bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway", "--canvas-listen", "0"])
            node = try SimulatedNode(port: bridge.port, arguments: ["--name", "tablet"])
            try node.pair(with: bridge)
            let words = try node.waitFor("canvas").split(separator: " ").map(String.init)
            canvas = CanvasEndToEndTests.Canvas(url: words[0], sha256: words[1])
        }

        var target: String { "http://127.0.0.1:\(sinkPort)" }

        func attack() throws -> [String] {
            try CanvasEndToEndTests.webview(["attack", canvas.url + "/__openclaw__/canvas/attack.html?target=\(target)", canvas.sha256])
        }

        /// What the sink heard, after one request of the test's own (so everything before it is in).
        func heard() throws -> [String] {
            let marker = "/marker-\(UUID().uuidString.prefix(8))"
            let probe = try ChildProcess(URL(fileURLWithPath: Python.executable), ["-c", "import urllib.request; urllib.request.urlopen('\(target)\(marker)').read()"])
            _ = probe.wait()
            _ = try sink.waitForLine(timeout: 30) { $0.contains(marker) }
            return sink.output.filter { $0.hasPrefix("{") && !$0.contains(marker) }
        }

        func stop() {
            host.killIfRunning()
            sink.killIfRunning()
        }
    }

    @Test func aRelayedPageCannotReachALoopbackHTTPServerByFetchImageFrameOrForm() throws {
        let stack = try Stack()
        defer { stack.stop() }
        let lines = try stack.attack()
        #expect(lines.first == "title blocked connect-src,form-action,frame-src,img-src", "\(lines)")
        let heard = try stack.heard()
        #expect(heard.isEmpty, "the page reached the LAN: \(heard)")
    }

    /// The same origin allowed by the config's `canvas.allowOrigins` is allowed to the page too:
    /// one policy for what the agent may navigate to and what a page may reach.
    @Test func anOriginTheRulesAllowIsReachable() throws {
        let stack = try Stack()
        defer { stack.stop() }
        let allowed = try CLI.run(["nodes", "allow", "tablet", stack.target, "--state-dir", stack.bridge.state.path])
        #expect(allowed.status == 0, "\(allowed)")
        let lines = try stack.attack()
        #expect(lines.first == "title reached", "\(lines)")
        let heard = try stack.heard()
        #expect(heard.contains { $0.contains("\"/fetch\"") } && heard.contains { $0.contains("\"/img\"") }, "\(heard)")
    }
}
