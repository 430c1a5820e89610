import ArgumentParser
import Foundation
import LanbridgeNet
import LanbridgeProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// A small agent gateway for tests, demos and gateway authors: it accepts the bridge's WebSocket
/// link on loopback (PROTOCOL.md §12), logs what the bridge reports, and lets a shell drive the
/// bridge over plain HTTP on the same port:
///
///     curl -s localhost:18789/nodes
///     curl -s localhost:18789/nodes/Pixel-7
///     curl -s localhost:18789/invoke -d '{"nodeId":"Pixel-7","command":"canvas.snapshot"}'
@main
struct GatewaySim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lanbridge-gateway-sim",
        abstract: "A reference agent gateway: accepts the bridge's link and exposes list, describe and invoke over HTTP.",
        discussion: """
        stdout gets one line per happening: "listening PORT", "bridge connected NAME", "bridge disconnected", "event {json}" for every node.event, "call METHOD {json}" for every node call (agent calls are answered {"accepted":true}).

        HTTP on the same port (loopback only):
          GET  /nodes           node.list
          GET  /nodes/ID        node.describe (ID or display name)
          POST /invoke          node.invoke; body {"nodeId","command","params"?,"timeoutMs"?,"idempotencyKey"?}
          POST /cancel          node.invoke.cancel; body {"nodeId", "idempotencyKey" | "id"}
        Each answers with the bridge's response frame: {"ok":true,"payload":…} or {"ok":false,"error":{…}}. 503 when no bridge is connected.

        The token comes from $LANBRIDGE_GATEWAY_TOKEN or --token-file. By default the bridge must prove it (PROTOCOL.md §12.1: the gateway answers the bridge's challenge with its own proof, and checks the bridge's in bridge.hello); --auth bearer expects it in an Authorization header instead.
        """
    )

    @Option(help: "Port on 127.0.0.1.") var port = 18789
    @Option(help: "Listen on this Unix socket instead of a port (mode 0660; HTTP works there too).") var unix: String?
    @Option(help: "File holding the token the bridge must present.") var tokenFile: String?
    @Option(help: "proof (default) or bearer.") var auth = "proof"

    func run() async throws {
        let token: String
        if let value = ProcessInfo.processInfo.environment["LANBRIDGE_GATEWAY_TOKEN"], !value.isEmpty {
            token = value
        } else if let tokenFile, let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) {
            token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            throw ValidationError("give the token in LANBRIDGE_GATEWAY_TOKEN or --token-file")
        }
        let expected = "Bearer \(token)"
        let tokenBytes = Array(token.utf8)
        let proof = auth == "proof"
        // Every upgrade is accepted (answering the bridge's challenge with our proof), and a bridge
        // with the wrong token is then closed with 1008 (policy violation) and a reason it can log.
        let server = try await WebSocketServer.bind(unix.map { .unix(path: $0) } ?? .tcp(host: "127.0.0.1", port: port), maxMessageSize: 64 << 20) { head in
            guard proof, let answer = GatewayProof.answer(challenge: head.headers[GatewayProof.challengeHeader].first, token: tokenBytes) else { return HTTPHeaders() }
            return HTTPHeaders([(GatewayProof.proofHeader, answer.header)])
        }
        if let unix { chmod(unix, 0o660) }
        say("listening \(unix ?? String(server.channel.localAddress?.port ?? port))")
        let link = BridgeLink()
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { inbound in
                for try await accepted in inbound {
                    group.addTask {
                        switch try? await accepted.get() {
                        case let .webSocket(connection, head, answered)? where proof:
                            // The bridge's proof in bridge.hello must match what our answer implies.
                            let expectedProof = GatewayProof.expectedBridgeProof(challenge: head.headers[GatewayProof.challengeHeader].first,
                                                                                 answer: answered[GatewayProof.proofHeader].first, token: tokenBytes)
                            await link.serve(connection, check: .proof(expectedProof))
                        case let .webSocket(connection, head, _)? where head.headers["Authorization"].first == expected:
                            await link.serve(connection, check: .bearerChecked)
                        case let .webSocket(connection, _, _)?:
                            say("refused a bridge with a wrong token")
                            try? await connection.run { writer, _ in try await writer.close(code: .policyViolation, reason: "bad token") }
                        case let .http(channel)?:
                            try? await WebSocketServer.serve(channel) { head, body in await handle(head, body, link: link) }
                        case nil: break
                        }
                    }
                }
            }
        }
    }
}

/// Routes the HTTP side.
func handle(_ head: HTTPRequestHead, _ body: [UInt8], link: BridgeLink) async -> WebSocketServer.HTTPResponse {
    let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
    let request: (String, JSONValue)
    switch (head.method, path) {
    case (.GET, "/nodes"):
        request = (ControlMethod.nodeList.name, [:])
    case (.GET, _) where path.hasPrefix("/nodes/"):
        request = (ControlMethod.nodeDescribe.name, ["nodeId": .string(String(path.dropFirst("/nodes/".count)).removingPercentEncoding ?? "")])
    case (.POST, "/invoke"):
        guard case var .object(params)? = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            return .init(status: .badRequest, body: Array(#"{"error":"body must be a JSON object"}"#.utf8))
        }
        if params["idempotencyKey"] == nil { params["idempotencyKey"] = .string(UUID().uuidString) }
        request = (ControlMethod.nodeInvoke.name, .object(params))
    case (.POST, "/cancel"):
        guard let params = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            return .init(status: .badRequest, body: Array(#"{"error":"body must be a JSON object"}"#.utf8))
        }
        request = (ControlMethod.nodeInvokeCancel.name, params)
    default:
        return .init(status: .notFound, body: Array(#"{"error":"GET /nodes, GET /nodes/ID, POST /invoke or POST /cancel"}"#.utf8))
    }
    guard let answer = await link.request(request.0, params: request.1) else {
        return .init(status: .serviceUnavailable, body: Array(#"{"ok":false,"error":{"code":"UNAVAILABLE","message":"no bridge is connected"}}"#.utf8))
    }
    let object: JSONValue
    switch answer {
    case let .success(payload): object = ["ok": true, "payload": payload ?? .null]
    case let .failure(error):
        // An error always encodes; were it not to, its code and message still reach the caller.
        object = ["ok": false, "error": (try? JSONValue(encoding: error)) ?? ["code": .string(error.code), "message": .string(error.message)]]
    }
    return .init(status: .ok, body: Array((try? LanbridgeJSON.compact.encode(object)) ?? Data()))
}

/// The one bridge connected at a time (a newer link replaces an older one), and the requests
/// waiting for its answers.
actor BridgeLink {
    private var writer: WebSocketWriter?
    private var generation = 0
    private var waiting: [String: CheckedContinuation<Result<JSONValue?, ErrorMessage>?, Never>] = [:]
    private var nextID = 0

    enum Check {
        /// The bearer token was checked at the upgrade.
        case bearerChecked
        /// Nothing is served until the bridge's hello carries this proof (nil: there was no
        /// usable challenge, so no proof can match).
        case proof([UInt8]?)
    }

    func serve(_ connection: WebSocketConnection, check: Check) async {
        try? await connection.run { writer, messages in
            var verified = if case .bearerChecked = check { true } else { false }
            generation += 1
            let mine = generation
            for try await message in messages {
                if !verified {
                    guard case let .proof(proof?) = check, case let .event(name, payload)? = try? GatewayFrame.decode(message),
                          name == GatewayMethod.helloEvent, let given = payload?["proof"]?.stringValue.flatMap({ try? Hex.decode($0) }), given == proof else {
                        say("refused a bridge with a wrong token")
                        try await writer.close(code: .policyViolation, reason: "bad token")
                        return
                    }
                    verified = true
                }
                self.writer = writer
                await received(message, writer: writer)
            }
            if generation == mine { dropped() }
        }
    }

    private func dropped() {
        writer = nil
        say("bridge disconnected")
        let pending = waiting.values
        waiting.removeAll()
        pending.forEach { $0.resume(returning: nil) }
    }

    private func received(_ bytes: [UInt8], writer: WebSocketWriter) async {
        guard let frame = try? GatewayFrame.decode(bytes) else { return say("bad frame from the bridge") }
        switch frame {
        case let .event(name, payload) where name == GatewayMethod.helloEvent:
            say("bridge connected \(payload?["bridgeName"]?.stringValue ?? "?")")
        case let .event(_, payload):
            say("event \(line(payload))")
        case let .response(id, result):
            waiting.removeValue(forKey: id)?.resume(returning: result)
        case let .request(id, method, params):
            say("call \(method) \(line(params))")
            let answer: Result<JSONValue?, ErrorMessage> = method == GatewayMethod.agent
                ? .success(["accepted": true, "runId": .string(UUID().uuidString)])
                : .success(nil)
            try? await writer.send(text: GatewayFrame.response(id: id, result: answer).encoded())
        }
    }

    /// Nil when no bridge is connected, or it left before answering.
    func request(_ method: String, params: JSONValue) async -> Result<JSONValue?, ErrorMessage>? {
        guard let writer else { return nil }
        nextID += 1
        let id = "g\(nextID)"
        return await withCheckedContinuation { continuation in
            waiting[id] = continuation
            Task {
                do { try await writer.send(text: GatewayFrame.request(id: id, method: method, params: params).encoded()) } catch {
                    self.fail(id)
                }
            }
        }
    }

    private func fail(_ id: String) {
        waiting.removeValue(forKey: id)?.resume(returning: nil)
    }
}

func line(_ value: JSONValue?) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(value ?? .null)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
}

func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
