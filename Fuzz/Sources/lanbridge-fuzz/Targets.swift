import Foundation
import LanbridgeCoreWalk
import LanbridgeCrypto
import LanbridgeProtocol

// libFuzzer's entry point. Each target feeds the input to one decoder that reads bytes from the
// network, and checks an invariant on what it accepts; a violated invariant traps, which libFuzzer
// reports as a crash with the input that caused it.

enum Target: String, CaseIterable {
    case frame, preamble, transport, session, gateway, json, txt, invite, openclaw, dns, canvasurl, canvasrequest, canvasexchange, openclawapp, browserrequest,
        core
}

let target: Target = {
    let name = ProcessInfo.processInfo.environment["LANBRIDGE_FUZZ_TARGET"] ?? ""
    guard let target = Target(rawValue: name) else {
        FileHandle.standardError.write(Data("set LANBRIDGE_FUZZ_TARGET to one of: \(Target.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

func invariant(_ condition: @autoclosure () -> Bool, _ what: String) {
    if !condition() {
        FileHandle.standardError.write(Data("invariant failed: \(what)\n".utf8))
        abort()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    switch target {
    case .frame: frame(bytes)
    case .preamble: preamble(bytes)
    case .transport: transport(bytes)
    case .session: session(bytes)
    case .gateway: gateway(bytes)
    case .json: json(bytes)
    case .txt: txt(bytes)
    case .invite: invite(bytes)
    case .openclaw: openclaw(bytes)
    case .dns: dns(bytes)
    case .canvasurl: canvasURL(bytes)
    case .canvasrequest: canvasRequest(bytes)
    case .canvasexchange: canvasExchange(bytes)
    case .openclawapp: openClawApp(bytes)
    case .browserrequest: browserRequest(bytes)
    case .core: core(bytes)
    }
    return 0
}

/// The bridge's core, walked by the input: each byte chooses an event (a node connects, answers,
/// goes to the background; the gateway asks, holds, drops; the operator revokes; time passes), and
/// the core's promises are checked after every step (`CoreWalk`).
func core(_ bytes: [UInt8]) {
    guard var walk = try? CoreWalk() else { return invariant(false, "the walk's core starts") }
    var choices = CoreWalk.Bytes(bytes)
    walk.walk(&choices, steps: 4096)
    invariant(walk.problems.isEmpty, "the core kept its promises: \(walk.problems.prefix(3))")
}

/// Frames out never exceed the limit, and re-framing them gives back the bytes consumed.
func frame(_ bytes: [UInt8]) {
    var decoder = FrameDecoder(limit: 8192)
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    decoder.append(Array(bytes[..<split]))
    decoder.append(Array(bytes[split...]))
    var consumed = 0
    while let frame = try? decoder.next() {
        invariant(!frame.isEmpty && frame.count <= 8192, "frame within the limit")
        invariant(Array(bytes[consumed..<consumed + frame.count + 2]) == FrameDecoder.frame(frame), "frame is what was sent")
        consumed += frame.count + 2
    }
    _ = try? decoder.finish()
}

/// A preamble that parses writes back to the same bytes.
func preamble(_ bytes: [UInt8]) {
    guard let parsed = try? Preamble(parsing: bytes) else { return }
    invariant(parsed.bytes == bytes, "preamble round trip")
}

let bridgeKey = X25519.KeyPair.generate()
let nodeKey = X25519.KeyPair.generate()
/// A bridge and a node past the handshake, both authorised: copied for each input.
let established: (node: SecureSession, bridge: SecureSession) = {
    do {
        var (node, opening) = try SecureSession.initiate(with: nodeKey)
        var bridge = SecureSession(responderWith: bridgeKey)
        var message3: [UInt8] = []
        for case let .send(w2) in try bridge.receive(opening) { for case let .send(w3) in try node.receive(w2) { message3 = w3 } }
        _ = try bridge.receive(message3)
        node.authorize()
        bridge.authorize()
        return (node, bridge)
    } catch {
        fatalError("handshake: \(error)")
    }
}()

/// Mode 0: raw bytes at a fresh bridge never complete a handshake or deliver a message.
/// Mode 1: raw bytes on an established session never deliver a message (they cannot be sealed).
/// Mode 2: the rest, sealed by the node, arrives as exactly that one message.
func transport(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    let rest = Array(bytes.dropFirst())
    switch mode % 3 {
    case 0:
        var bridge = SecureSession(responderWith: bridgeKey)
        let outputs = (try? bridge.receive(rest)) ?? []
        invariant(!outputs.contains { if case .established = $0 { true } else { false } }, "no handshake from noise")
    case 1:
        var bridge = established.bridge
        let outputs = (try? bridge.receive(rest)) ?? []
        invariant(!outputs.contains { if case .message = $0 { true } else { false } }, "no message from noise")
    default:
        var (node, bridge) = established
        guard let wire = try? node.seal(rest) else { return }
        let delivered = ((try? bridge.receive(wire)) ?? []).compactMap { if case let .message(m) = $0 { m } else { nil } }
        invariant(delivered == [rest], "a sealed message arrives whole and alone")
    }
}

/// What the bridge accepts from a node, any JSON reader reads the same way.
func session(_ bytes: [UInt8]) {
    guard let inbound = try? SessionMessages.read(bytes) else { return }
    invariant((try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))) != nil, "accepted message is JSON to Foundation")
    if case let .result(result) = inbound, case let .raw(payload) = result.payload {
        invariant((try? JSONDecoder().decode(JSONValue.self, from: Data(payload))) != nil, "a relayed payload is JSON to Foundation")
    }
}

/// A frame that decodes encodes to a frame that decodes to the same thing.
func gateway(_ bytes: [UInt8]) {
    guard let frame = try? GatewayFrame.decode(bytes) else { return }
    invariant((try? GatewayFrame.decode(frame.encoded())) == frame, "gateway frame round trip")
}

/// An OpenClaw gateway's frames, as the challenge and once the session is up: whatever comes in,
/// what goes out is a frame that decodes, an invoke has object params, and it is answered once.
let openClawDevice = OpenClawDevice(key: try! Ed25519.KeyPair(seed: SecureBytes(copying: [UInt8](repeating: 7, count: 32))))
let openClawConfiguration = OpenClawNodeSession.Configuration(
    device: openClawDevice, claims: .node(platform: "ios", deviceFamily: "iPhone"), displayName: "fuzz", instanceId: "fuzz",
    version: "0", caps: [], commands: ["canvas.snapshot"], sharedToken: "t", deviceToken: nil)

let openClawReady: OpenClawNodeSession = {
    var session = OpenClawNodeSession(openClawConfiguration, nowMs: 0)
    _ = session.received(Array(#"{"type":"event","event":"connect.challenge","payload":{"nonce":"n","ts":1}}"#.utf8), nowMs: 1)
    _ = session.received(Array(#"{"type":"res","id":"connect","ok":true,"payload":{"type":"hello-ok","protocol":4}}"#.utf8), nowMs: 2)
    return session
}()

func openclaw(_ bytes: [UInt8]) {
    func check(_ actions: [OpenClawNodeSession.Action], _ session: inout OpenClawNodeSession) {
        for action in actions {
            switch action {
            case let .send(frame):
                invariant((try? GatewayFrame.decode(frame)) != nil, "the session sends only frames that decode")
            case let .invoke(invoke):
                if let params = invoke.params, case .object = params {} else { invariant(invoke.params == nil, "invoke params are an object") }
                let answers = session.nodeAnswered(invokeId: invoke.id, .success(.value(nil)))
                invariant(answers.count <= 1, "one answer per invoke")
                invariant(session.nodeAnswered(invokeId: invoke.id, .success(.value(nil))).isEmpty, "never answered twice")
            default:
                break
            }
        }
    }
    var fresh = OpenClawNodeSession(openClawConfiguration, nowMs: 0)
    check(fresh.received(bytes, nowMs: 1), &fresh)
    var ready = openClawReady  // a value: each run starts from the same session, signed once
    invariant(ready.isReady, "the fixed handshake completes")
    check(ready.received(bytes, nowMs: 3), &ready)
    check(ready.nodeForeground(true), &ready)
}

/// The scanner accepts only what Foundation reads, and finds the same members.
func json(_ bytes: [UInt8]) {
    guard let members = try? JSONScanner.members(["type", "payload"], in: bytes) else { return }
    guard let whole = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
        return invariant(false, "accepted document is JSON to Foundation")
    }
    if let range = members["payload"] {
        invariant((try? JSONDecoder().decode(JSONValue.self, from: Data(bytes[range]))) == whole["payload"], "payload member")
    }
    if let range = members["type"], case let .string(type)? = whole["type"] {
        invariant(JSONScanner.string(bytes[range]) == type, "type member")
    }
}

/// TXT strings (split at NUL) that parse give an advertisement whose own TXT record fits and
/// parses back to it.
func txt(_ bytes: [UInt8]) {
    let strings = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard let advertisement = BridgeAdvertisement(txt: strings) else { return }
    let record = advertisement.txt
    invariant(
        record.reduce(0) { $0 + $1.utf8.count + 1 } <= BridgeAdvertisement.maxTXTLength || advertisement.shortFingerprint.utf8.count > 150,
        "TXT record fits")
    guard let again = BridgeAdvertisement(txt: record) else { return invariant(false, "TXT record parses back") }
    invariant(again.versions == advertisement.versions && again.shortFingerprint == advertisement.shortFingerprint, "TXT round trip")
}

/// A DNS answer (wide-area browsing) that parses has names within DNS's bounds, and no more
/// records than its bytes can hold.
func dns(_ bytes: [UInt8]) {
    guard let response = try? DNS.parse(bytes) else { return }
    invariant(response.records.count <= bytes.count / 11, "record count bounded by size")
    for record in response.records {
        invariant(record.name.labels.reduce(1) { $0 + $1.count + 1 } <= 255 && record.name.labels.allSatisfy { !$0.isEmpty && $0.count <= 63 }, "name bounds")
    }
}

/// An invite URI that parses prints as one that parses to the same invite.
func invite(_ bytes: [UInt8]) {
    guard let text = String(validating: bytes, as: UTF8.self), let invite = InviteURI(text) else { return }
    invariant(InviteURI(invite.description) == invite, "invite URI round trip")
}

// SwiftPM links an executable's entry point as `<module>_main`; hand over to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@_cdecl("lanbridge_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, count in fuzz(data, count) }
}

/// A canvas URL (issue 37 §3): the reader never traps, and what it reads is stable. A URL the
/// default policy allows has a public https host (or is about:blank), and its origin, read again,
/// gives the same host and port (so printing a host cannot turn it into another).
func canvasURL(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let verdict = CanvasURLPolicy().decide(text, relayOrigin: nil)
    guard let url = try? CanvasURL(text) else {
        invariant(verdict != .allow, "an unreadable URL is refused")
        return
    }
    if let origin = url.origin {
        let again = try? CanvasURL(origin)
        invariant(again?.host == url.host && again?.port == url.port, "an origin reads back as itself")
    }
    if verdict == .allow, url.scheme != "about" {
        invariant(url.scheme == "https" && !url.hasCredentials, "only https without credentials")
        invariant(url.host.map { CanvasURLPolicy.localReason($0) == nil } == true, "only public hosts")
    }
}

/// A request head at the canvas relay (issue 37): the reader never traps; what it accepts is a
/// GET/HEAD under the canvas paths (or the live-reload upgrade) with no dot segment, and the head
/// rebuilt for upstream has exactly the lines it writes (no header value brings a CR or LF).
func canvasRequest(_ bytes: [UInt8]) {
    guard let request = try? CanvasRequest(head: bytes) else { return }
    invariant(request.method == "GET" || request.method == "HEAD", "only GET and HEAD")
    invariant(!request.path.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == ".." || $0 == "." }, "no dot segments")
    invariant(
        request.path == CanvasRequest.liveReloadPath || CanvasRequest.servedPrefixes.contains { request.path == $0 || request.path.hasPrefix($0 + "/") },
        "only the canvas paths")
    let head = request.upstreamHead(host: "127.0.0.1:1", upstreamCapability: "U")
    let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
    invariant(!head.dropLast(4).contains("\r\n\r\n") && lines.allSatisfy { !$0.contains("\n") && !$0.contains("\r") }, "one head, whole lines")
    invariant(!head.lowercased().contains("cookie:") && !head.lowercased().contains("authorization:"), "no credentials upstream")
}

/// The browser door's decision on a request's head (issue 64): the input is the method, the URI,
/// `Host` and `Origin`, split at 0x00 bytes (a missing one is absent), and a flag byte (upgrade,
/// plain). Whatever they say: the node socket opens only for the door's own origin, on a name it
/// serves and its port; only the shell's files are served, and over plain HTTP only the install ones.
func browserRequest(_ bytes: [UInt8]) {
    let parts = bytes.split(separator: 0, maxSplits: 4, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let field = { (i: Int) in i < parts.count ? parts[i] : nil }
    let flags = bytes.last ?? 0
    let check = BrowserRequestCheck(
        names: ["bridge.local", "192.168.1.10", "*.lan.example.com"], port: 18795,
        files: ["index.html", "shell.js", "install.html", "lanbridge-root.crt", "bridge.json"])
    let verdict = check.judge(
        method: field(0) ?? "GET", uri: field(1) ?? "/", host: field(2), origin: field(3), upgrade: flags & 1 == 1, plain: flags & 2 == 2)
    switch verdict {
    case .nodeSocket:
        let host = (field(2) ?? "").lowercased()
        invariant(flags & 2 == 0 && flags & 1 == 1, "the socket only over TLS, only by an upgrade")
        invariant(field(3) == "https://\(host)" && host.hasSuffix(":18795"), "the socket only from the door's own origin")
        invariant(
            ["bridge.local:18795", "192.168.1.10:18795"].contains(host) || (host.hasSuffix(".lan.example.com:18795") && host.split(separator: ".").count == 4),
            "a name the door serves")
    case let .asset(name):
        invariant(check.files.contains(name), "only the shell's files")
        invariant(flags & 2 == 0 || BrowserRequestCheck.plainFiles.contains(name), "over plain HTTP only the install files")
    case let .redirect(location):
        invariant(location.hasPrefix("https://") && !location.contains("\r") && !location.contains("\n"), "a redirect to HTTPS, one header line")
    case .refuse:
        break
    }
}

/// One relayed canvas request (issue 48 §1, §5), both sides hostile: the input is a request kind,
/// then chunks, each a direction byte (even: the canvas host, odd: the node; 0xFF: the host
/// closes), a length byte and that many bytes. Whatever they say: nothing of the node's reaches the
/// host before a checked switch, and after it only control frames do; the upstream capability
/// never reaches the node; nothing moves after the close or a kept connection's end (`kind & 4`:
/// the node asked to keep the connection, issue 53 §1), and a kept answer is never an upgrade's.
func canvasExchange(_ bytes: [UInt8]) {
    guard let kind = bytes.first else { return }
    let cap = "kWz4f-t5Z7fK2_YHJIBfbqFZ", upstream = "UPSTREAMcapabilityxxxxxx"
    let head =
        kind & 1 == 0
        ? "GET /__openclaw__/ws?oc_cap=\(cap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        : "\(kind & 2 == 0 ? "GET" : "HEAD") /__openclaw__/cap/\(cap)/__openclaw__/canvas/ HTTP/1.1\r\nHost: h\r\n\r\n"
    guard let request = try? CanvasRequest(head: Array(head.utf8)) else { return invariant(false, "the seed request reads") }
    var response = CanvasResponseReader.Settings(
        upstreamCapability: upstream, nodeCapability: cap, maxBodyBytes: 4096, maxHeadBytes: 1024,
        upstreamOrigins: ["http://127.0.0.1:18789"], relayOrigin: "https://10.0.0.1:1")
    response.keepAlive = kind & 4 != 0
    var exchange = CanvasExchange(request: request, response: response, maskKey: [1, 2, 3, 4], maxHeld: 1024)
    var toNode: [UInt8] = [], closed = false
    var hostReader = LiveReloadFrameReader(.fromClient, maxPayload: 125)
    var i = 1
    while i + 1 < bytes.count {
        let direction = bytes[i], length = Int(bytes[i + 1])
        let chunk = Array(bytes[(i + 2)..<min(bytes.count, i + 2 + length)])
        i += 2 + length
        let actions = direction == 0xFF ? exchange.hostClosed() : direction & 1 == 0 ? exchange.fromHost(chunk) : exchange.fromNode(chunk)
        invariant(!closed || actions.isEmpty, "nothing moves after the close")
        for action in actions {
            switch action {
            case let .toNode(out): toNode += out
            case let .toHost(out):
                invariant(exchange.isSocket || closed, "nothing of the node's reaches the host before the switch")
                guard let frames = try? hostReader.read(out) else { return invariant(false, "the relay sends the host whole, valid frames") }
                invariant(frames.allSatisfy { $0.opcode.isControl }, "only control frames from the node")
            case .close, .retry: closed = true  // a retry is another exchange's, with a fresh capability
            case .finished:
                invariant(!request.upgrade && response.keepAlive, "only a plain request the node asked to keep ends kept")
                closed = true
            }
        }
    }
    let needle = Array(upstream.utf8)
    invariant(
        toNode.count < needle.count || !(0...(toNode.count - needle.count)).contains { toNode[$0..<($0 + needle.count)].elementsEqual(needle) },
        "the upstream capability never reaches the node")
}

/// Frames from one of OpenClaw's apps before it is let in (issue 38): no trap, and nothing
/// reaches the core from an unproven socket.
func openClawApp(_ bytes: [UInt8]) {
    var session = OpenClawAppSession(nonce: "fuzz-nonce", nowMs: 1_795_000_000_000)
    var frames: [[UInt8]] = []
    var start = bytes.startIndex
    for (i, byte) in bytes.enumerated() where byte == 0x0A {
        frames.append(Array(bytes[start..<i]))
        start = i + 1
    }
    frames.append(Array(bytes[start...]))
    for frame in frames.prefix(8) {
        for action in session.received(frame, binary: false, nowMs: 1_795_000_000_000) {
            if case .toBridge = action { invariant(false, "nothing reaches the core before the device is proved and paired") }
        }
    }
}
