import Foundation
import NIOCore
import NIOEmbedded
import NIOWebSocket
import TestSupport
import Testing
@testable import LanbridgeBridge
import LanbridgeProtocol

/// Issue 64: the browser door's decisions on a request's head, its framing, and the shell it serves.
struct BrowserDoorTests {
    let check = BrowserRequestCheck(names: ["bridge.local", "192.168.1.10"], port: 18795, files: ["index.html", "shell.js", "bridge.json"])
    let upgrade = (method: "GET", uri: "/node")

    @Test func theNodeSocketOpensOnlyFromTheShellsOwnOrigin() {
        #expect(check.judge(method: "GET", uri: "/node", host: "bridge.local:18795", origin: "https://bridge.local:18795", upgrade: true) == .nodeSocket)
        #expect(check.judge(method: "GET", uri: "/node", host: "BRIDGE.local:18795", origin: "https://bridge.local:18795", upgrade: true) == .nodeSocket)
        #expect(check.judge(method: "GET", uri: "/node", host: "192.168.1.10:18795", origin: "https://192.168.1.10:18795", upgrade: true) == .nodeSocket)
        for origin in [
            nil, "null", "https://evil.example", "http://bridge.local:18795", "https://bridge.local", "https://bridge.local:18796",
            "https://192.168.1.10:18795", "https://bridge.local:18795/",
        ] {
            #expect(
                check.judge(method: "GET", uri: "/node", host: "bridge.local:18795", origin: origin, upgrade: true) == .refuse(status: 403, reason: "not this page's origin"),
                "\(origin ?? "nil")")
        }
        #expect(check.judge(method: "GET", uri: "/node", host: "bridge.local:18795", origin: "https://bridge.local:18795", upgrade: false).isRefusal(426))
        #expect(check.judge(method: "POST", uri: "/node", host: "bridge.local:18795", origin: "https://bridge.local:18795", upgrade: true).isRefusal(426))
    }

    /// DNS rebinding: any name but the certificate's, or another port, is misdirected (421).
    @Test(arguments: [
        nil, "", "evil.example:18795", "bridge.local.evil.example:18795", "bridge.local", "bridge.local:18796", "bridge.local:",
        "bridge.local:+18795", "[::1]:18795", "127.0.0.1:18795", "bridge.local:018795x",
    ])
    func aForeignHostIsMisdirected(host: String?) {
        #expect(check.judge(method: "GET", uri: "/", host: host, origin: nil, upgrade: false).isRefusal(421))
        #expect(check.judge(method: "GET", uri: "/node", host: host, origin: "https://bridge.local:18795", upgrade: true).isRefusal(421))
    }

    @Test func theShellsFilesAndNothingElse() {
        #expect(check.judge(method: "GET", uri: "/", host: "bridge.local:18795", origin: nil, upgrade: false) == .asset("index.html"))
        #expect(check.judge(method: "GET", uri: "/?x=1", host: "bridge.local:18795", origin: nil, upgrade: false) == .asset("index.html"))
        #expect(check.judge(method: "HEAD", uri: "/shell.js", host: "bridge.local:18795", origin: nil, upgrade: false) == .asset("shell.js"))
        #expect(check.judge(method: "GET", uri: "/bridge.json", host: "bridge.local:18795", origin: nil, upgrade: false) == .asset("bridge.json"))
        for path in ["/../paired.json", "/shell.js/", "//shell.js", "/x", "/index.html/.."] {
            #expect(check.judge(method: "GET", uri: path, host: "bridge.local:18795", origin: nil, upgrade: false).isRefusal(404), "\(path)")
        }
        #expect(check.judge(method: "POST", uri: "/", host: "bridge.local:18795", origin: nil, upgrade: false).isRefusal(405))
        // On 443 the origin has no port, and a Host without one is this door.
        let standard = BrowserRequestCheck(names: ["bridge.local"], port: 443, files: ["index.html"])
        #expect(standard.judge(method: "GET", uri: "/node", host: "bridge.local", origin: "https://bridge.local", upgrade: true) == .nodeSocket)
    }

    /// Plain HTTP: the install page and the root's downloads on the bridge CA's door; anything else,
    /// or any other tier's door, is sent to HTTPS.
    @Test func plainHTTPOnlyInstallsTheRoot() {
        let files: Set<String> = ["index.html", "shell.js", "shell.css", "install.html", "install.js", "lanbridge-root.crt", "lanbridge.mobileconfig", "bridge.json"]
        let ca = BrowserRequestCheck(names: ["bridge.local"], port: 18795, files: files)
        let judge = { (path: String) in ca.judge(method: "GET", uri: path, host: "bridge.local:18795", origin: nil, upgrade: false, plain: true) }
        #expect(judge("/") == .asset("install.html"))
        #expect(judge("/lanbridge.mobileconfig") == .asset("lanbridge.mobileconfig"))
        for path in ["/index.html", "/shell.js", "/bridge.json", "/node", "/x"] { #expect(judge(path) == .redirect("https://bridge.local:18795/"), "\(path)") }
        #expect(ca.judge(method: "GET", uri: "/", host: "evil.example:18795", origin: nil, upgrade: false, plain: true).isRefusal(421))
        let own = BrowserRequestCheck(names: ["bridge.local"], port: 18795, files: files.subtracting(["lanbridge-root.crt", "lanbridge.mobileconfig"]))
        #expect(own.judge(method: "GET", uri: "/", host: "bridge.local:18795", origin: nil, upgrade: false, plain: true) == .redirect("https://bridge.local:18795/"))
    }

    /// A wildcard certificate's name covers one label, as browsers match it.
    @Test func aWildcardCoversOneLabel() {
        let wild = BrowserRequestCheck(names: ["*.lan.example.com"], port: 8443, files: ["index.html"])
        #expect(wild.judge(method: "GET", uri: "/", host: "bridge.lan.example.com:8443", origin: nil, upgrade: false) == .asset("index.html"))
        for host in ["lan.example.com:8443", "a.b.lan.example.com:8443", "*.lan.example.com:8443", ".lan.example.com:8443", "bridge.lan.example.org:8443"] {
            #expect(wild.judge(method: "GET", uri: "/", host: host, origin: nil, upgrade: false).isRefusal(421), "\(host)")
        }
    }

    /// One binary message is one frame, its length bytes added inbound and taken off outbound;
    /// frames a write carries together, or split across writes, each become one message.
    @Test func framesAreMessagesBothWays() throws {
        let channel = EmbeddedChannel(handler: BrowserFrames())
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(bytes: [1, 2, 3])))
        #expect(try channel.readInbound(as: ByteBuffer.self).map { Array($0.readableBytesView) } == [0, 3, 1, 2, 3])
        try channel.writeOutbound(ByteBuffer(bytes: [0, 2, 9, 9, 0, 1, 7, 0]))
        try channel.writeOutbound(ByteBuffer(bytes: [3, 5, 5, 5]))
        var messages: [[UInt8]] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            #expect(frame.opcode == .binary && frame.fin)
            messages.append(Array(frame.data.readableBytesView))
        }
        #expect(messages == [[9, 9], [7], [5, 5, 5]])
        _ = try? channel.finish()
    }

    /// A text message, a fragment or an empty one ends the connection with a close frame.
    @Test(arguments: [
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{}")),
        WebSocketFrame(fin: false, opcode: .binary, data: ByteBuffer(bytes: [1])),
        WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer()),
    ])
    func anythingButWholeBinaryMessagesCloses(frame: WebSocketFrame) throws {
        let channel = EmbeddedChannel(handler: BrowserFrames())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(frame)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .connectionClose)
        #expect(!channel.isActive)
    }

    /// The embedded shell is the files in browser/shell/ (scripts/embed-shell), and small.
    @Test func theEmbeddedShellIsTheRepositorysFilesAndSmall() throws {
        let folder = Repository.url("browser/shell")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names == ShellAssets.files.keys.sorted(), "run scripts/embed-shell")
        var scriptsAndStyles: [UInt8] = []
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            #expect(ShellAssets.files[name]?.body == bytes, "\(name) differs from ShellAssets.swift: run scripts/embed-shell")
            if name.hasSuffix(".js") || name.hasSuffix(".css") { scriptsAndStyles += bytes }
        }
        // The issue's budget: the shell's JS and CSS under 60 KB gzipped (gzip -9, as a server would send them).
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzip.arguments = ["-9c"]
        let input = Pipe(), output = Pipe()
        (gzip.standardInput, gzip.standardOutput) = (input, output)
        try gzip.run()
        input.fileHandleForWriting.write(Data(scriptsAndStyles))
        try input.fileHandleForWriting.close()
        let compressed = output.fileHandleForReading.readDataToEndOfFile().count
        gzip.waitUntilExit()
        #expect(compressed > 0 && compressed < 60_000, "\(compressed) bytes gzipped")
    }
}

extension BrowserRequestCheck.Verdict {
    func isRefusal(_ status: Int) -> Bool {
        if case let .refuse(given, _) = self { return given == status }
        return false
    }
}
