import Foundation
import Testing
import TestSupport

/// Issue 48 §1 against a real keep-alive canvas host: Debian's nginx, started here on loopback,
/// serving the canvas with a single-page fallback (`try_files … /index.html`), which is what makes
/// smuggling work against a relay that passes bytes. A paired node tries it every way the review
/// did; nginx's own access log says what reached it.
@Suite(
    .enabled(if: Nginx.missing == nil, Comment(rawValue: Nginx.missing ?? "")),
    .enabled(if: Python.hasModule("websockets"), "needs Python's websockets (scripts/setup installs it)"))
struct CanvasSmugglingTests {
    /// A bridge in §12 mode with nginx as its canvas host, and one paired node.
    struct Stack {
        let nginx: Nginx
        let bridge: BridgeDaemon
        let node: SimulatedNode
        let canvas: CanvasEndToEndTests.Canvas

        init(liveReload: ChildProcess? = nil) throws {
            let port = try liveReload.map { Int(String(try $0.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count))) ?? 0 }
            nginx = try Nginx(liveReloadPort: port)
            let state = TemporaryDirectory("bridge")
            try Data(#"{"canvas": {"upstream": "http://127.0.0.1:\#(nginx.port)"}}"#.utf8).write(to: state.url.appendingPathComponent("config.json"))
            bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway", "--canvas-listen", "0"])
            node = try SimulatedNode(port: bridge.port, arguments: ["--name", "tablet"])
            try node.pair(with: bridge)
            let words = try node.waitFor("canvas").split(separator: " ").map(String.init)
            canvas = CanvasEndToEndTests.Canvas(url: words[0], sha256: words[1])
        }

        /// What nginx logged, after a marker request through the relay has been logged too, so every
        /// request that reached it before the marker is in.
        func requestsReachingTheHost() throws -> [String] {
            let marker = "/__openclaw__/canvas/marker-\(UUID().uuidString.prefix(8)).html"
            _ = try CanvasEndToEndTests.fetch(canvas.url + marker, canvas.sha256)
            return try nginx.accessLog(until: marker)
        }
    }

    static let smuggled = [
        "POST /admin/delete-everything HTTP/1.1\r\nHost: gateway\r\nCookie: session=stolen\r\nAuthorization: Bearer t\r\nContent-Length: 2\r\n\r\nhi",
        "GET /not-canvas/secret HTTP/1.1\r\nHost: gateway\r\n\r\n",
    ]
    static let later = "DELETE /gateway/route HTTP/1.1\r\nHost: gateway\r\n\r\n"

    static func json(_ text: String) throws -> String { String(decoding: try JSONEncoder().encode(text), as: UTF8.self) }

    /// The review's attack: half an upgrade (no key), and requests behind it in the same write and a
    /// later one. Refused at the head: nothing reaches nginx.
    @Test func halfAnUpgradeIsRefusedAndNothingBehindItReachesTheHost() throws {
        let stack = try Stack()
        let head = "GET /__openclaw__/cap/\(stack.canvas.capability)/__openclaw__/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        let lines = try CanvasEndToEndTests.webview([
            "smuggle", stack.canvas.origin, stack.canvas.sha256,
            try Self.json(head + Self.smuggled.joined()), try Self.json(Self.later),
        ])
        #expect(lines.first == "status 404", "\(lines)")
        let reached = try stack.requestsReachingTheHost()
        #expect(!reached.contains { $0.contains("/admin") || $0.contains("/not-canvas") || $0.contains("DELETE") || $0.contains("/__openclaw__/ws") }, "\(reached)")
    }

    /// A whole upgrade to a host that does not switch (nginx's fallback answers 200 and keeps the
    /// connection): the answer comes back, both sides close, and what the node sent behind its head
    /// is never sent.
    @Test func aWholeUpgradeToAHostThatDoesNotSwitchGetsItsAnswerAndNothingMore() throws {
        let stack = try Stack()
        let head =
            "GET /__openclaw__/ws?oc_cap=\(stack.canvas.capability) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let lines = try CanvasEndToEndTests.webview([
            "smuggle", stack.canvas.origin, stack.canvas.sha256,
            try Self.json(head + Self.smuggled.joined()), try Self.json(Self.later),
        ])
        #expect(lines == ["status 200", "closed"], "\(lines)")
        let reached = try stack.requestsReachingTheHost()
        #expect(reached.count == 2 && reached[0].contains("GET /__openclaw__/ws "), "\(reached)")
        #expect(!reached.contains { $0.contains("/admin") || $0.contains("/not-canvas") || $0.contains("DELETE") }, "\(reached)")
    }

    /// Live reload through nginx to a real WebSocket server still works; a page that speaks on it
    /// (a data frame) is cut off, and the server never hears it.
    @Test func liveReloadWorksThroughNginxAndThePageCannotSpeakOnIt() throws {
        let host = try ChildProcess(
            URL(fileURLWithPath: Python.executable), [Repository.url("Tests/IntegrationTests/python/live_reload_host.py").path],
            mergeStandardError: true)
        defer { host.killIfRunning() }
        let stack = try Stack(liveReload: host)
        let url = stack.canvas.origin + "/__openclaw__/ws?oc_cap=" + stack.canvas.capability
        let lines = try CanvasEndToEndTests.webview(["speak", url, stack.canvas.sha256, #"{"type":"req","id":"1","method":"connect"}"#])
        #expect(lines.prefix(2) == ["open", "message reload"] && lines.last == "closed 1008", "\(lines)")
        // The server saw the socket come and go, and heard nothing from the page.
        _ = try host.waitForLine(timeout: 30) { $0 == "live closed" }
        #expect(!host.output.contains { $0.hasPrefix("live message") }, "\(host.output)")
    }

    // MARK: - Keep-alive (issue 53 §1): the same checks on a kept connection

    func kept(_ stack: Stack, _ requests: [String]) throws -> [String] {
        try CanvasEndToEndTests.webview(["kept", stack.canvas.origin, stack.canvas.sha256] + requests.map(Self.json))
    }

    static func get(_ capability: String, _ path: String = "/__openclaw__/canvas/index.html", _ extra: String = "") -> String {
        "GET /__openclaw__/cap/\(capability)\(path) HTTP/1.1\r\nHost: x\r\n\(extra)\r\n"
    }

    /// One request at a time on one connection: each answered whole, the connection kept; a second
    /// request is decided as strictly as the first (capability, another node's capability, path,
    /// method, a body, Host), refused and the connection closed; `Connection: close` is honoured.
    @Test func aSecondRequestOnAKeptConnectionIsCheckedAsStrictlyAsTheFirst() throws {
        let stack = try Stack()
        let other = try SimulatedNode(port: stack.bridge.port, arguments: ["--name", "other tablet"])
        try other.pair(with: stack.bridge)
        let othersCapability = String(try other.waitFor("canvas").split(separator: " ")[0].split(separator: "/").last ?? "")
        let cap = stack.canvas.capability
        #expect(try kept(stack, [Self.get(cap), Self.get(cap), Self.get(cap)]) == ["status 200 keep", "status 200 keep", "status 200 keep"])
        let refused = [
            Self.get("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            Self.get(othersCapability),
            Self.get(cap, "/not-canvas/secret"),
            "POST /__openclaw__/cap/\(cap)/__openclaw__/canvas/index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
            Self.get(cap, "/__openclaw__/canvas/index.html", "Transfer-Encoding: chunked\r\n"),
            "GET /__openclaw__/cap/\(cap)/__openclaw__/canvas/index.html HTTP/1.1\r\n\r\n",
            Self.get(cap, "/__openclaw__/canvas/%2e%2e/secret"),
        ]
        for second in refused {
            let lines = try kept(stack, [Self.get(cap), second, Self.get(cap)])
            #expect(lines == ["status 200 keep", "status 404 close", "closed"], "\(second.debugDescription): \(lines)")
        }
        #expect(try kept(stack, [Self.get(cap, "/__openclaw__/canvas/index.html", "Connection: close\r\n"), Self.get(cap)]) == ["status 200 close", "closed"])
        let reached = try stack.requestsReachingTheHost()
        #expect(!reached.contains { $0.contains("POST") || $0.contains("/not-canvas") || $0.contains("secret") }, "\(reached)")
    }

    /// Pipelining is not read: two requests in one write, first or later on a kept connection, get
    /// the first answered, marked `Connection: close`, and what was behind it never reaches the host.
    @Test func nothingSentBehindAHeadIsReadAsARequestOnAKeptConnection() throws {
        let stack = try Stack()
        let cap = stack.canvas.capability
        let behind = Self.get(cap, "/__openclaw__/canvas/pipelined-\(UUID().uuidString.prefix(8)).html")
        let first = try kept(stack, [Self.get(cap) + behind, Self.get(cap)])
        #expect(first == ["status 200 close", "closed"], "\(first)")
        let later = try kept(stack, [Self.get(cap), Self.get(cap) + behind, Self.get(cap)])
        #expect(later == ["status 200 keep", "status 200 close", "closed"], "\(later)")
        let smuggled = try kept(stack, [Self.get(cap), Self.get(cap) + Self.smuggled.joined(), Self.get(cap)])
        #expect(smuggled == ["status 200 keep", "status 200 close", "closed"], "\(smuggled)")
        let reached = try stack.requestsReachingTheHost()
        #expect(!reached.contains { $0.contains("pipelined-") || $0.contains("/admin") || $0.contains("/not-canvas") }, "\(reached)")
    }

    /// A phone's reconnect skips the full handshake: the relay issues TLS 1.3 session tickets.
    @Test func aReconnectResumesItsTLSSession() throws {
        let stack = try Stack()
        let lines = try CanvasEndToEndTests.webview(["resume", stack.canvas.url + "/__openclaw__/canvas/index.html", stack.canvas.sha256])
        #expect(lines == ["first new", "second reused"], "\(lines)")
    }
}

/// Debian's nginx on a free loopback port, run in the foreground by the test with a configuration
/// of its own: a canvas root with a single-page fallback, keep-alive on, and (when given a port)
/// `/__openclaw__/ws` proxied to a WebSocket server.
final class Nginx: @unchecked Sendable {
    static let binary = "/usr/sbin/nginx"
    static var missing: String? {
        FileManager.default.isExecutableFile(atPath: binary) ? nil : "needs Debian's nginx (scripts/setup installs nginx-light)"
    }

    let directory = TemporaryDirectory("nginx")
    let process: ChildProcess
    let port: Int

    init(liveReloadPort: Int?) throws {
        let root = directory.url.appendingPathComponent("root")
        let canvas = root.appendingPathComponent("__openclaw__/canvas")
        try FileManager.default.createDirectory(at: canvas, withIntermediateDirectories: true)
        try Data("<!doctype html><title>index</title>".utf8).write(to: root.appendingPathComponent("index.html"))
        try Data("<p>canvas</p>".utf8).write(to: canvas.appendingPathComponent("index.html"))
        port = try Python.freePort()
        let live =
            liveReloadPort.map {
                "location = /__openclaw__/ws { proxy_pass http://127.0.0.1:\($0); proxy_http_version 1.1; "
                    + "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\"; }"
            } ?? ""
        let d = directory.path
        let conf = """
            user root root; master_process off; daemon off; pid \(d)/nginx.pid; error_log \(d)/error.log;
            events { worker_connections 64; }
            http {
              access_log \(d)/access.log; keepalive_timeout 65; keepalive_requests 1000;
              client_body_temp_path \(d)/body; proxy_temp_path \(d)/proxy; fastcgi_temp_path \(d)/fcgi;
              uwsgi_temp_path \(d)/uwsgi; scgi_temp_path \(d)/scgi;
              server {
                listen 127.0.0.1:\(port); root \(root.path);
                \(live)
                location / { try_files $uri $uri/ /index.html; }
              }
            }
            """
        try Data(conf.utf8).write(to: directory.file("nginx.conf"))
        process = try ChildProcess(URL(fileURLWithPath: Self.binary), ["-c", directory.file("nginx.conf").path, "-p", d], mergeStandardError: true)
        // Ready once it answers on its port.
        let probe = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [
                "-c",
                """
                import socket, time
                for _ in range(300):
                    try: socket.create_connection(('127.0.0.1', \(port)), 0.1).close(); print('up'); break
                    except OSError: time.sleep(0.02)
                """,
            ])
        guard try probe.nextLine(timeout: 30) == "up" else { throw Failure(description: "nginx did not start: \(process.output)") }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// The access log's request lines, once one of them names `marker` (nginx writes each line as
    /// it finishes a request).
    func accessLog(until marker: String) throws -> [String] {
        var lines: [String] = []
        _ = try DirectoryWatcher(directory.url).wait(timeout: 30) { [self] in
            lines = ((try? String(contentsOf: directory.file("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.contains { $0.contains(marker) }
        }
        return lines
    }

    deinit { process.killIfRunning() }
}
