import Foundation
@testable import LanbridgeProtocol
import Testing

/// Issue 48 §1 and §5: the relay passes a protocol, not bytes. Each attack from the review runs
/// against the pure exchange here; the same attacks run against real hosts in CanvasEndToEndTests.
struct CanvasExchangeTests {
    static let nodeCap = "kWz4f-t5Z7fK2_YHJIBfbqFZ"
    static let upstreamCap = "UPSTREAMcapabilityxxxxxx"
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    static func request(_ head: String) throws -> CanvasRequest { try CanvasRequest(head: Array(head.utf8)) }
    static let upgradeHead =
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
    static let pageHead = "GET /__openclaw__/cap/\(nodeCap)/__openclaw__/canvas/page HTTP/1.1\r\nHost: h\r\n\r\n"

    static func settings(upstream: String? = upstreamCap, maxBody: Int = 1 << 20) -> CanvasResponseReader.Settings {
        .init(
            upstreamCapability: upstream, nodeCapability: nodeCap, maxBodyBytes: maxBody, maxHeadBytes: 16 << 10,
            upstreamOrigins: ["http://127.0.0.1:18789"], relayOrigin: "https://192.168.1.10:18793", added: [("content-security-policy", "x")])
    }

    static func exchange(_ head: String, upstream: String? = upstreamCap, keepAlive: Bool = false) throws -> CanvasExchange {
        var response = settings(upstream: upstream)
        response.keepAlive = keepAlive
        return CanvasExchange(request: try request(head), response: response, maskKey: [1, 2, 3, 4], maxHeld: 16 << 10)
    }

    static func toHost(_ actions: [CanvasExchange.Action]) -> [UInt8] {
        actions.flatMap { action -> [UInt8] in if case let .toHost(b) = action { b } else { [] } }
    }
    static func nodeBytes(_ actions: [CanvasExchange.Action]) -> [UInt8] {
        actions.flatMap { action -> [UInt8] in if case let .toNode(b) = action { b } else { [] } }
    }
    static func toNode(_ actions: [CanvasExchange.Action]) -> String { String(decoding: nodeBytes(actions), as: UTF8.self) }
    /// What the node got after a response head (a socket's frames).
    static func afterHead(_ actions: [CanvasExchange.Action]) -> [UInt8] {
        let bytes = nodeBytes(actions)
        return CanvasRequest.endOfHead(bytes, from: 0).map { Array(bytes[$0...]) } ?? []
    }
    static func closed(_ actions: [CanvasExchange.Action]) -> Bool { actions.contains { if case .close = $0 { true } else { false } } }

    // MARK: - Keep-alive (issue 53 §1)

    static func finished(_ actions: [CanvasExchange.Action]) -> Bool { actions.contains(.finished) }

    /// What the node asked for: HTTP/1.1 keeps unless it says close; HTTP/1.0 and an upgrade never.
    @Test func aRequestAsksToBeKeptByItsVersionAndConnection() throws {
        #expect(try Self.request(Self.pageHead).keepAlive)
        #expect(try !Self.request(Self.pageHead.replacingOccurrences(of: "Host: h\r\n", with: "Host: h\r\nConnection: keep-alive, Close\r\n")).keepAlive)
        #expect(try !Self.request(Self.pageHead.replacingOccurrences(of: "HTTP/1.1", with: "HTTP/1.0")).keepAlive)
        #expect(try !Self.request(Self.upgradeHead).keepAlive)
    }

    /// An answer whose end is known keeps the connection (no `Connection: close` in its head, and
    /// `.finished`, not `.close`); one that ends with the host's close cannot; nor when not asked.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nindex", true),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nindex\r\n0\r\n\r\n", true),
        ("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
        ("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nuntil the close", false),
    ])
    func anAnswerWhoseEndIsKnownKeepsTheConnection(answer: String, kept: Bool) throws {
        var exchange = try Self.exchange(Self.pageHead, keepAlive: true)
        var actions = exchange.fromHost(Array(answer.utf8))
        if !kept { actions += exchange.hostClosed() }
        let head = Self.toNode(actions).components(separatedBy: "\r\n\r\n")[0].lowercased()
        #expect(head.contains("connection: close") != kept, "\(head)")
        #expect(Self.finished(actions) == kept && Self.closed(actions) != kept, "\(actions)")
        #expect(exchange.fromHost(Array("HTTP/1.1 200 OK\r\n\r\nmore".utf8)).isEmpty, "after its end, nothing more of the host's passes")

        var unasked = try Self.exchange(Self.pageHead, keepAlive: false)
        let closing = unasked.fromHost(Array(answer.utf8)) + unasked.hostClosed()
        #expect(Self.toNode(closing).lowercased().contains("connection: close") && !Self.finished(closing))
    }

    /// The last body bytes that pass unchanged end a kept answer too.
    @Test func aBodyPassedUnchangedEndsAKeptAnswer() throws {
        var exchange = try Self.exchange(Self.pageHead, upstream: nil, keepAlive: true)
        let head = exchange.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n".utf8))
        #expect(!Self.finished(head) && !Self.closed(head))
        let end = Array("body".utf8).withUnsafeBytes { exchange.passesUnchanged($0) }
        #expect(end == [.finished], "\(String(describing: end))")
    }

    /// A kept upgrade is not a thing: a host that answers an upgrade with a page closes it.
    @Test func anUpgradeIsNeverKept() throws {
        var exchange = try Self.exchange(Self.upgradeHead, keepAlive: true)
        let actions = exchange.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nindex".utf8))
        #expect(Self.closed(actions) && !Self.finished(actions))
    }

    // MARK: - The accept value

    @Test func sha1AndTheAcceptValueAreTheRFCs() {
        #expect(Hex.encode(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Hex.encode(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(WebSocketAccept.value(forKey: Self.key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")  // RFC 6455 §1.3
        #expect(WebSocketAccept.isValidKey(Self.key) && !WebSocketAccept.isValidKey("c2hvcnQ=") && !WebSocketAccept.isValidKey("!!!!!!!!!!!!!!!!!!!!!!=="))
    }

    // MARK: - Half an upgrade is no upgrade

    @Test(arguments: [
        // The review's attack: Upgrade and Connection, no key.
        "GET /__openclaw__/cap/\(nodeCap)/__openclaw__/ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 8\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.0\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /__openclaw__/ws?oc_cap=\(nodeCap) HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /__openclaw__/cap/\(nodeCap)/__openclaw__/canvas/ HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n",
        "GET /__openclaw__/cap/\(nodeCap)/__openclaw__/canvas/ HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n",
        "GET /__openclaw__/cap/\(nodeCap)/__openclaw__/canvas/ HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ])
    func anIncompleteOrMisplacedUpgradeIsRefused(head: String) {
        #expect(throws: CanvasRequest.Refusal.self) { try Self.request(head) }
    }

    // MARK: - Nothing after the head reaches a host that did not switch

    @Test func bytesSmuggledAfterAnUpgradeNeverReachAHostThatAnswersWithAPage() throws {
        var exchange = try Self.exchange(Self.upgradeHead)
        let smuggled = Array("POST /admin/delete-everything HTTP/1.1\r\nHost: x\r\nCookie: s=1\r\nContent-Length: 2\r\n\r\nhi".utf8)
        #expect(exchange.fromNode(smuggled).isEmpty)
        // A keep-alive host with a single-page fallback: 200, and the connection stays open.
        var answer = exchange.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nindex".utf8))
        answer += exchange.fromNode(Array("GET /not-canvas/secret HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(Self.toHost(answer).isEmpty, "\(answer)")
        #expect(Self.toNode(answer).hasPrefix("HTTP/1.1 200 OK\r\n") && Self.toNode(answer).hasSuffix("index") && Self.closed(answer))
        #expect(!Self.toNode(answer).lowercased().contains("keep-alive"))
        #expect(exchange.fromNode(smuggled).isEmpty && exchange.fromHost(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)).isEmpty)
    }

    @Test(arguments: [
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: wrongwrongwrongwrongwro=\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
    ])
    func aSwitchThatIsNotTheOneAskedForOpensNothing(answer: String) throws {
        var exchange = try Self.exchange(Self.upgradeHead)
        _ = exchange.fromNode(LiveReloadFrame(opcode: .ping, payload: []).encoded(mask: [9, 9, 9, 9]))
        let actions = exchange.fromHost(Array(answer.utf8))
        #expect(Self.toHost(actions).isEmpty && Self.toNode(actions).hasPrefix("HTTP/1.1 502 ") && Self.closed(actions), "\(actions)")
    }

    @Test func aSwitchToAPlainRequestIsRefused() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let actions = exchange.fromHost(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".utf8))
        #expect(Self.toNode(actions).hasPrefix("HTTP/1.1 502 ") && Self.closed(actions))
    }

    // MARK: - After the switch: frames, and only control frames from the node

    static let switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

    @Test func theLiveReloadSocketPassesTheHostsMessagesAndTheNodesControlFramesOnly() throws {
        var exchange = try Self.exchange(Self.upgradeHead)
        // A ping sent before the host answered waits, and goes once the switch is checked.
        #expect(exchange.fromNode(LiveReloadFrame(opcode: .ping, payload: Array("p".utf8)).encoded(mask: [5, 6, 7, 8])).isEmpty)
        let opened = exchange.fromHost(Array(Self.switched.utf8) + LiveReloadFrame(opcode: .text, payload: Array("reload".utf8)).encoded())
        #expect(Self.toNode(opened).hasPrefix("HTTP/1.1 101 Switching Protocols\r\n") && Self.toNode(opened).contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        var host = LiveReloadFrameReader(.fromClient, maxPayload: 125)
        #expect(try host.read(Self.toHost(opened)) == [LiveReloadFrame(opcode: .ping, payload: Array("p".utf8))])
        var node = LiveReloadFrameReader(.fromServer, maxPayload: 1 << 16)
        #expect(try node.read(Self.afterHead(opened)) == [LiveReloadFrame(opcode: .text, payload: Array("reload".utf8))])
        // A message fragmented across two frames is read whole, then passed.
        var message = exchange.fromHost(LiveReloadFrame(fin: false, opcode: .text, payload: Array("rel".utf8)).encoded())
        #expect(message.isEmpty)
        message = exchange.fromHost(LiveReloadFrame(opcode: .continuation, payload: Array("oad".utf8)).encoded())
        var reader = LiveReloadFrameReader(.fromServer, maxPayload: 1 << 16)
        #expect(try reader.read(Self.nodeBytes(message)) == [LiveReloadFrame(opcode: .text, payload: Array("reload".utf8))])

        // The node speaks: a data frame closes the socket, and not a byte of it reaches the host.
        let spoken = exchange.fromNode(LiveReloadFrame(opcode: .text, payload: Array(#"{"type":"req","method":"connect"}"#.utf8)).encoded(mask: [1, 1, 1, 1]))
        #expect(Self.toHost(spoken).isEmpty && Self.closed(spoken), "\(spoken)")
        var closing = LiveReloadFrameReader(.fromServer, maxPayload: 125)
        #expect(try closing.read(Self.nodeBytes(spoken)).first?.payload.prefix(2) == [0x03, 0xF0])  // 1008
        #expect(exchange.fromNode(LiveReloadFrame(opcode: .ping, payload: []).encoded(mask: [1, 1, 1, 1])).isEmpty)
    }

    /// Issue 60 §6: with OpenClaw's live reload off, the gateway's own WebSocket answers the
    /// upgrade and sends its `connect.challenge`. Only what live reload sends (the text `reload`)
    /// passes; anything else closes both sides, and not a byte of it reaches the page.
    @Test(arguments: [
        LiveReloadFrame(opcode: .text, payload: Array(#"{"type":"event","event":"connect.challenge","payload":{"nonce":"n","ts":1}}"#.utf8)),
        LiveReloadFrame(opcode: .binary, payload: Array("reload".utf8)),
        LiveReloadFrame(opcode: .text, payload: Array("reload ".utf8)),
    ])
    func aHostMessageThatIsNotAReloadClosesBothSides(frame: LiveReloadFrame) throws {
        var exchange = try Self.exchange(Self.upgradeHead)
        _ = exchange.fromHost(Array(Self.switched.utf8))
        let spoken = exchange.fromHost(frame.encoded())
        #expect(Self.closed(spoken), "\(spoken)")
        var node = LiveReloadFrameReader(.fromServer, maxPayload: 125)
        let toNode = try node.read(Self.nodeBytes(spoken))
        #expect(toNode.count == 1 && toNode.first?.opcode == .close && toNode.first?.payload.prefix(2) == [0x03, 0xF0], "only a 1008 close: \(toNode)")
        #expect(Self.toHost(spoken).isEmpty, "nothing goes to the host: its side is closed")
    }

    @Test(
        arguments: [[UInt8]]([
            LiveReloadFrame(opcode: .binary, payload: [1]).encoded(mask: [1, 2, 3, 4]),
            LiveReloadFrame(fin: false, opcode: .text, payload: [1]).encoded(mask: [1, 2, 3, 4]),
            LiveReloadFrame(opcode: .continuation, payload: [1]).encoded(mask: [1, 2, 3, 4]),
            LiveReloadFrame(opcode: .ping, payload: []).encoded(),  // unmasked
            [UInt8(0x89 | 0x40), 0x80, 1, 2, 3, 4],  // a reserved bit (typed: Swift 6.2 cannot infer it in this list)
            [0x83, 0x80, 1, 2, 3, 4],  // opcode 3
            LiveReloadFrame(opcode: .ping, payload: Array(repeating: 0, count: 126)).encoded(mask: [1, 2, 3, 4]),
            [0x09, 0x80, 1, 2, 3, 4],  // a fragmented ping
            [0x89, 0xFE, 0, 5, 1, 2, 3, 4, 0, 0, 0, 0, 0],  // a length not in its shortest form
            LiveReloadFrame(opcode: .close, payload: [3]).encoded(mask: [1, 2, 3, 4]),  // a one-byte close
        ]))
    func everyOtherFrameFromTheNodeClosesTheSocketWithNothingPassed(frame: [UInt8]) throws {
        var exchange = try Self.exchange(Self.upgradeHead)
        _ = exchange.fromHost(Array(Self.switched.utf8))
        let actions = exchange.fromNode(frame)
        #expect(Self.toHost(actions).isEmpty && Self.closed(actions), "\(actions)")
    }

    @Test func framesSplitAtEveryByteReadTheSame() throws {
        let frames = [
            LiveReloadFrame(opcode: .ping, payload: Array("abc".utf8)), LiveReloadFrame(opcode: .pong, payload: []),
            LiveReloadFrame.close(code: 1000, reason: "bye"),
        ]
        let bytes = frames.flatMap { $0.encoded(mask: [7, 0, 255, 3]) }
        for cut in 0...bytes.count {
            var reader = LiveReloadFrameReader(.fromClient, maxPayload: 125)
            let read = try reader.read(Array(bytes[..<cut])) + reader.read(Array(bytes[cut...]))
            #expect(read == frames, "cut at \(cut)")
        }
        var big = LiveReloadFrameReader(.fromServer, maxPayload: 70_000)
        #expect(try big.read(LiveReloadFrame(opcode: .binary, payload: Array(repeating: 1, count: 65_536)).encoded()).first?.payload.count == 65_536)
        var small = LiveReloadFrameReader(.fromServer, maxPayload: 100)
        #expect(throws: LiveReloadFrameReader.Violation.self) { try small.read(LiveReloadFrame(opcode: .text, payload: Array(repeating: 1, count: 101)).encoded()) }
    }

    // MARK: - Responses read as HTTP (§5)

    /// Reads a relayed response back: its head, then the body de-chunked.
    static func decode(_ actions: [CanvasExchange.Action]) -> (head: String, body: String) {
        let bytes = nodeBytes(actions)
        guard let end = CanvasRequest.endOfHead(bytes, from: 0) else { return (String(decoding: bytes, as: UTF8.self), "") }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        var rest = bytes[end...]
        guard head.lowercased().contains("transfer-encoding: chunked") else { return (head, String(decoding: rest, as: UTF8.self)) }
        var body: [UInt8] = []
        while let lf = rest.firstIndex(of: 0x0A), let size = Int(String(decoding: rest[..<(lf - 1)], as: UTF8.self), radix: 16), size > 0 {
            body += rest[(lf + 1)..<(lf + 1 + size)]
            rest = rest[(lf + 1 + size + 2)...]
        }
        return (head, String(decoding: body, as: UTF8.self))
    }

    @Test func aCapabilitySplitAcrossChunksAtEveryOffsetNeverPasses() throws {
        let page = "<a href=\"/__openclaw__/cap/\(Self.upstreamCap)/__openclaw__/canvas/x\">x</a>"
        for offset in 0...page.utf8.count {
            let bytes = Array(page.utf8)
            let chunks = [bytes[..<offset], bytes[offset...]].filter { !$0.isEmpty }
            var wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/html\r\n\r\n"
            for chunk in chunks { wire += String(chunk.count, radix: 16) + ";ext=1\r\n" + String(decoding: chunk, as: UTF8.self) + "\r\n" }
            wire += "0\r\nX-Trailer: \(Self.upstreamCap)\r\n\r\n"
            // Each byte its own read, too: the framing may split anywhere.
            for byteByByte in [false, true] {
                var exchange = try Self.exchange(Self.pageHead)
                var actions: [CanvasExchange.Action] = []
                if byteByByte { for byte in wire.utf8 { actions += exchange.fromHost([byte]) } } else { actions = exchange.fromHost(Array(wire.utf8)) }
                let out = Self.toNode(actions)
                #expect(!out.contains(Self.upstreamCap) && Self.closed(actions), "offset \(offset): \(out)")
                #expect(Self.decode(actions).body == page.replacingOccurrences(of: Self.upstreamCap, with: Self.nodeCap), "offset \(offset)")
            }
        }
    }

    /// Found by the fuzz target: the status line's reason phrase is the host's text too.
    @Test func aCapabilityInTheReasonPhraseIsSwapped() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let out = Self.toNode(exchange.fromHost(Array("HTTP/1.1 200 \(Self.upstreamCap)\r\nContent-Length: 0\r\n\r\n".utf8)))
        #expect(out.hasPrefix("HTTP/1.1 200 \(Self.nodeCap)\r\n") && !out.contains(Self.upstreamCap), "\(out)")
    }

    @Test func aRedirectPointsAtTheRelayWithTheNodesCapability() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let actions = exchange.fromHost(
            Array(
                ("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:18789/__openclaw__/cap/\(Self.upstreamCap)/__openclaw__/canvas/\r\n"
                    + "Content-Length: 0\r\n\r\n").utf8))
        #expect(Self.toNode(actions).contains("location: https://192.168.1.10:18793/__openclaw__/cap/\(Self.nodeCap)/__openclaw__/canvas/\r\n"), "\(Self.toNode(actions))")
        #expect(Self.toNode(actions).contains("content-security-policy: x\r\n") && Self.closed(actions))
        var other = try Self.exchange(Self.pageHead)
        let elsewhere = Self.toNode(other.fromHost(Array("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:187890/x\r\nContent-Length: 0\r\n\r\n".utf8)))
        #expect(elsewhere.contains("location: http://127.0.0.1:187890/x\r\n"))
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", "upstream_content_encoding"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "upstream_transfer_encoding"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", "upstream_content_length"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "upstream_content_length"),
        ("HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n", "upstream_bad_head"),
        ("HTTP/1.1 200 OK\nX: y\r\n\r\n", "upstream_bad_head"),
        ("HTTP/2 200\r\n\r\n", "upstream_bad_head"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", "canvasMaxResponseBytes"),
    ])
    func aResponseTheRelayCannotReadWholeIsRefused(wire: String, reason: String) throws {
        var exchange = try Self.exchange(Self.pageHead)
        let actions = exchange.fromHost(Array(wire.utf8))
        #expect(actions.contains(.close(refused: reason)) && Self.toNode(actions).hasPrefix("HTTP/1.1 502 "), "\(actions)")
    }

    @Test func aBrokenBodyAfterTheHeadClosesTheConnectionWithoutItsLastChunk() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let actions = exchange.fromHost(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n".utf8))
        #expect(actions.last == .close(refused: "upstream_chunk") && Self.toNode(actions).hasSuffix("3\r\nabc\r\n"), "\(actions)")
    }

    @Test func theResponseEndsWhereItsFramingSaysAndNothingAfterItPasses() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let actions = exchange.fromHost(Array("HTTP/1.1 103 Early Hints\r\nLink: </a.js>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyHTTP/1.1 200 OK\r\n\r\nmore".utf8))
        let out = Self.toNode(actions)
        #expect(out.hasPrefix("HTTP/1.1 200 OK\r\n") && out.hasSuffix("\r\n\r\nbody") && !out.contains("more") && !out.contains("103"), "\(out)")
        #expect(Self.closed(actions))
        // HEAD, 204 and 304 have no body whatever their Content-Length says.
        var head = try Self.exchange("HEAD /__openclaw__/cap/\(Self.nodeCap)/__openclaw__/canvas/page HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(Self.closed(head.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".utf8))))
        // A body cut short by the host is not passed off as whole: the connection is closed, not ended.
        var short = try Self.exchange(Self.pageHead)
        _ = short.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8))
        #expect(short.hostClosed() == [.close(refused: "upstream_closed_early")])
        // Without a length the body ends with the connection.
        var open = try Self.exchange(Self.pageHead)
        #expect(Self.toNode(open.fromHost(Array("HTTP/1.0 200 OK\r\n\r\nab".utf8))).hasSuffix("ab"))
        #expect(open.hostClosed() == [.close(refused: nil)])
    }

    @Test func aContentLengthBodyIsSwappedInPlaceAndABodyWithNothingToSwapPassesUncopied() throws {
        var exchange = try Self.exchange(Self.pageHead)
        let head = exchange.fromHost(Array("HTTP/1.1 200 OK\r\nContent-Length: 34\r\n\r\n".utf8))
        #expect(Self.toNode(head).hasSuffix("\r\n\r\n") && !Self.closed(head))
        let plain = Array("0123456789".utf8)
        #expect(plain.withUnsafeBytes { exchange.passesUnchanged($0) } == [])
        let rest = exchange.fromHost(Array(Self.upstreamCap.utf8))
        #expect(Self.toNode(rest) == Self.nodeCap && Self.closed(rest))
    }
}
