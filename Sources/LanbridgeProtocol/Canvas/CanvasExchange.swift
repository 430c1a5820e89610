#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One request relayed to the canvas host, and its answer, sans I/O: bytes from either side in,
/// bytes for either side and a close out. The relay's handlers only move what this decides.
///
/// A plain request: its head goes upstream and nothing the node sends after it does (no
/// pipelining, so nothing can be smuggled behind it); the answer comes back through
/// `CanvasResponseReader`. When that answer's end is known (a length, chunks, no body) and the
/// node asked for it, the exchange ends `.finished` instead of `.close`: the relay may read the
/// node's next head once the whole answer is written, and decides it as it decided this one.
///
/// The live-reload upgrade (issue 48 §1): a relay passes a protocol, not bytes.
/// - The node's bytes after its head are held, unread by anyone, until the host has answered.
/// - Only a `101` with `Upgrade: websocket`, `Connection: upgrade`, the right
///   `Sec-WebSocket-Accept`, no extension and a subprotocol the node offered (if any) opens the
///   socket; any other answer goes back as a response, filtered, and both sides close with the
///   held bytes never sent.
/// - After the switch both directions are read as frames (`LiveReloadFrameReader`). The host may
///   send control frames and one data message: what live reload sends, the text `reload`
///   (OpenClaw's canvas-host/server.ts), passed whole. Any other message from the host closes both
///   sides with 1008 (issue 60 §6): with OpenClaw's `canvasHost.liveReload` off, the gateway's own
///   WebSocket server answers this path, and its `connect.challenge` must not reach the page. The
///   node may send control frames only: live reload never needs a data frame from the page, and
///   one is how a node would speak to whatever answered. A data frame from the node closes the
///   socket with 1008.
public struct CanvasExchange: Sendable {
    public enum Action: Equatable, Sendable {
        case toNode([UInt8])
        case toHost([UInt8])
        /// The exchange is over: close both sides (after writing what came before). `refused`
        /// names a refusal to count and log.
        case close(refused: String?)
        /// The host refused the upstream capability and nothing went to the node: close the host's
        /// side and ask again, once, with a fresh capability.
        case retry
        /// The answer is whole and the node's connection is kept: close the host's side; the
        /// node's next request is read once what came before is written.
        case finished
    }

    /// A host message (a whole, possibly fragmented, data message) larger than this closes the socket.
    public static let maxHostMessageBytes = 64 << 10
    /// The one data message a live-reload socket carries from the host.
    public static let liveReloadMessage: [UInt8] = Array("reload".utf8)

    private enum Stage: Sendable {
        case answer(CanvasResponseReader)
        case socket(node: LiveReloadFrameReader, host: LiveReloadFrameReader, message: [UInt8]?, opcode: LiveReloadFrame.Opcode)
        case closed
    }

    public let request: CanvasRequest
    private var stage: Stage
    /// The node's bytes after an upgrade's head, until the host has answered.
    private var held: [UInt8] = []
    private let maxHeld: Int
    private let maskKey: [UInt8]
    private let swap: CapabilitySwap

    /// `maskKey`: four random bytes, for the frames the relay sends the host (RFC 6455 §5.3).
    /// `maxHeld`: what the node may send ahead of the host's answer to an upgrade.
    public init(request: CanvasRequest, response: CanvasResponseReader.Settings, maskKey: [UInt8], maxHeld: Int) {
        self.request = request
        stage = .answer(CanvasResponseReader(response, method: request.method))
        (self.maskKey, self.maxHeld) = (maskKey, maxHeld)
        swap = CapabilitySwap(upstream: response.upstreamCapability, replacement: response.nodeCapability)
    }

    public var isSocket: Bool { if case .socket = stage { true } else { false } }

    // MARK: - From the node

    public mutating func fromNode(_ bytes: [UInt8]) -> [Action] {
        switch stage {
        case .answer:
            // A plain request's head was all of it; after an upgrade's, the rest waits here.
            guard request.upgrade else { return [] }
            held += bytes
            guard held.count <= maxHeld else { return close("canvasMaxHeaderBytes") }
            return []
        case .socket(var node, let host, let message, let opcode):
            stage = .closed  // so that `node` is mutated in place, not copied (set again on every way out)
            let frames: [LiveReloadFrame]
            do { frames = try node.read(bytes) } catch {
                return [.toNode(LiveReloadFrame.close(code: error.code, reason: error.reason).encoded())] + close("live_reload_protocol")
            }
            stage = .socket(node: node, host: host, message: message, opcode: opcode)
            return forward(fromNode: frames)
        case .closed:
            return []
        }
    }

    private mutating func forward(fromNode frames: [LiveReloadFrame]) -> [Action] {
        var actions: [Action] = []
        for frame in frames {
            guard frame.opcode.isControl else {
                return actions + [.toNode(LiveReloadFrame.close(code: 1008, reason: "the live-reload socket takes no data from the page").encoded())]
                    + close("live_reload_data_from_node")
            }
            guard frame.opcode != .close || frame.payload.count != 1 else {
                return actions + [.toNode(LiveReloadFrame.close(code: 1002, reason: "a bad close frame").encoded())] + close("live_reload_protocol")
            }
            actions.append(.toHost(frame.encoded(mask: maskKey)))
            if frame.opcode == .close { return actions + close(nil) }
        }
        return actions
    }

    // MARK: - From the host

    public mutating func fromHost(_ bytes: [UInt8]) -> [Action] {
        switch stage {
        case var .answer(reader):
            stage = .closed  // as above
            let events = reader.read(bytes)
            stage = .answer(reader)
            return answer(events)
        case .socket(let node, var host, var message, var opcode):
            stage = .closed  // as above
            let frames: [LiveReloadFrame]
            do { frames = try host.read(bytes) } catch {
                return [.toNode(LiveReloadFrame.close(code: 1011, reason: "the canvas host broke the protocol").encoded())] + close("live_reload_host_protocol")
            }
            var actions: [Action] = []
            for frame in frames {
                if frame.opcode.isControl {
                    guard let payload = swap.applied(frame.payload) else { return actions + close("upstream_capability") }
                    actions.append(.toNode(LiveReloadFrame(opcode: frame.opcode, payload: payload).encoded()))
                    if frame.opcode == .close { return actions + close(nil) }
                    continue
                }
                // A message is passed whole, so a capability split across its fragments is swapped too.
                switch (frame.opcode, message) {
                case (.continuation, nil), (.text, .some), (.binary, .some):
                    return actions + [.toNode(LiveReloadFrame.close(code: 1011, reason: "the canvas host broke the protocol").encoded())]
                        + close("live_reload_host_protocol")
                case (.continuation, .some(let sofar)):
                    message = sofar + frame.payload
                default:
                    (message, opcode) = (frame.payload, frame.opcode)
                }
                guard (message?.count ?? 0) <= Self.maxHostMessageBytes else {
                    return actions + [.toNode(LiveReloadFrame.close(code: 1009, reason: "message too big").encoded())] + close("live_reload_message_size")
                }
                if frame.fin, let whole = message {
                    message = nil
                    guard opcode == .text, whole == Self.liveReloadMessage else {
                        return actions + [.toNode(LiveReloadFrame.close(code: 1008, reason: "not a live-reload message").encoded())]
                            + close("live_reload_not_reload")
                    }
                    actions.append(.toNode(LiveReloadFrame(opcode: opcode, payload: whole).encoded()))
                }
            }
            stage = .socket(node: node, host: host, message: message, opcode: opcode)
            return actions
        case .closed:
            return []
        }
    }

    /// A read from the host that can go to the node as it came (body bytes, nothing to swap in
    /// them): what to do after writing it, or nil to hand it to `fromHost` instead.
    public mutating func passesUnchanged(_ bytes: UnsafeRawBufferPointer) -> [Action]? {
        guard case var .answer(reader) = stage else { return nil }
        stage = .closed  // as above
        let passes = reader.passesUnchanged(bytes)
        stage = .answer(reader)
        guard passes else { return nil }
        return reader.isDone ? ended(reader) : []
    }

    public mutating func hostClosed() -> [Action] {
        switch stage {
        case var .answer(reader):
            let events = reader.hostClosed()
            stage = .answer(reader)
            return answer(events) + (isClosed ? [] : close(nil))
        case .socket:
            return close(nil)
        case .closed:
            return []
        }
    }

    private var isClosed: Bool { if case .closed = stage { true } else { false } }

    private mutating func answer(_ events: [CanvasResponseReader.Event]) -> [Action] {
        var actions: [Action] = []
        for event in events {
            switch event {
            case let .toNode(bytes):
                actions.append(.toNode(bytes))
            case .end:
                // The answer is complete; held bytes are never sent.
                guard case let .answer(reader) = stage else { return actions + close(nil) }
                return actions + ended(reader)
            case let .cut(reason, status):
                if let status { actions.append(.toNode(Self.refusal(status))) }
                return actions + close(reason)
            case let .switching(head, rest):
                return actions + switched(head, rest: rest)
            case .unauthorized:
                stage = .closed
                return actions + [.retry]
            }
        }
        return actions
    }

    /// The host answered 101: the socket opens only if it is the switch the node asked for.
    private mutating func switched(_ head: CanvasResponseReader.Head, rest: [UInt8]) -> [Action] {
        guard request.upgrade, let key = request.headers.first(where: { $0.name == "sec-websocket-key" })?.value else {
            return [.toNode(Self.refusal(502))] + close("upstream_unexpected_switch")
        }
        let offered = request.headers.filter { $0.name == "sec-websocket-protocol" }
            .flatMap { $0.value.split(separator: ",").map(\.trimmingSpaces) }
        let chosen = head.values("sec-websocket-protocol")
        guard head.values("upgrade").map({ $0.lowercased() }) == ["websocket"], head.lists("connection", "upgrade"),
            head.values("sec-websocket-accept") == [WebSocketAccept.value(forKey: key)],
            head.values("sec-websocket-extensions").isEmpty,
            chosen.count <= 1, chosen.allSatisfy(offered.contains)
        else {
            return [.toNode(Self.refusal(502))] + close("upstream_bad_switch")
        }
        var out = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(WebSocketAccept.value(forKey: key))\r\n"
        if let protocolName = chosen.first { out += "Sec-WebSocket-Protocol: \(protocolName)\r\n" }
        out += "\r\n"
        stage = .socket(
            node: LiveReloadFrameReader(.fromClient, maxPayload: 125), host: LiveReloadFrameReader(.fromServer, maxPayload: Self.maxHostMessageBytes),
            message: nil, opcode: .text)
        var actions: [Action] = [.toNode(Array(out.utf8))]
        if !rest.isEmpty { actions += fromHost(rest) }
        let early = held
        held = []
        if !early.isEmpty, !isClosed { actions += fromNode(early) }
        return actions
    }

    /// A whole answer: the connection is kept if its head said so.
    private mutating func ended(_ reader: CanvasResponseReader) -> [Action] {
        guard reader.persistent, !request.upgrade else { return close(nil) }
        stage = .closed
        held = []
        return [.finished]
    }

    private mutating func close(_ refused: String?) -> [Action] {
        stage = .closed
        held = []
        return [.close(refused: refused)]
    }

    /// A short, fixed answer for what the relay itself refuses.
    public static func refusal(_ status: Int) -> [UInt8] {
        let text =
            switch status {
            case 404: "Not Found"
            case 429: "Too Many Requests"
            case 431: "Request Header Fields Too Large"
            case 502: "Bad Gateway"
            default: "Service Unavailable"
            }
        let body = "\(text)\n"
        return Array(
            ("HTTP/1.1 \(status) \(text)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Cache-Control: no-store\r\nConnection: close\r\n\r\n" + body).utf8)
    }
}
