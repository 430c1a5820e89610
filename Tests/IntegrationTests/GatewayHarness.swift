import Foundation
import NIOConcurrencyHelpers
import LanbridgeProtocol
import TestSupport

/// A gateway token in a file the bridge accepts (mode 0600); returns its path.
func writeTokenFile(_ token: String, in directory: TemporaryDirectory) -> String {
    let file = directory.url.appendingPathComponent("token").path
    precondition(FileManager.default.createFile(atPath: file, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600]))
    return file
}

/// A real `lanbridge-gateway-sim` on a loopback port, with a token file for the bridge.
final class SimulatedGateway: @unchecked Sendable {
    let process: ChildProcess
    let port: Int
    let tokenFile: String
    private let directory: TemporaryDirectory

    init(port: Int = 0, tokenFile: String? = nil, directory: TemporaryDirectory = TemporaryDirectory("gateway"), arguments: [String] = []) throws {
        self.directory = directory
        let file = tokenFile ?? writeTokenFile("test-token-\(UUID().uuidString)\n", in: directory)
        self.tokenFile = file
        process = try launch("lanbridge-gateway-sim", ["--port", String(port), "--token-file", file] + arguments, mergeStandardError: true)
        // "listening PORT", or "listening PATH" on a Unix socket (port 0 then).
        self.port = Int(try process.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count)) ?? 0
    }

    /// Bridge arguments that link it to this gateway.
    var bridgeArguments: [String] { ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", tokenFile] }

    /// The next stdout line starting with `prefix`.
    @discardableResult
    func waitFor(_ prefix: String) throws -> String {
        try process.waitForLine(timeout: 30) { $0.hasPrefix(prefix) }
    }

    /// The next node.event of `type`, as JSON.
    @discardableResult
    func waitForEvent(_ type: String) throws -> JSONValue {
        let line = try process.waitForLine(timeout: 30) { $0.hasPrefix("event ") && $0.contains("\"type\":\"\(type)\"") }
        return try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("event ".count).utf8))
    }

    struct Answer {
        let ok: Bool
        let payload: JSONValue?
        let error: JSONValue?
        var code: String? { error?["code"]?.stringValue }
    }

    func invoke(_ node: String, _ command: String, params: JSONValue? = nil, timeoutMs: Int? = nil) throws -> Answer {
        var body: [String: JSONValue] = ["nodeId": .string(node), "command": .string(command)]
        if let params { body["params"] = params }
        if let timeoutMs { body["timeoutMs"] = .number(Double(timeoutMs)) }
        return try call("POST", "/invoke", body: .object(body))
    }

    func call(_ method: String, _ path: String, body: JSONValue? = nil) throws -> Answer {
        let response = try HTTPClient.request(method, port: port, path: path, body: try body.map { try JSONEncoder().encode($0) })
        let json = try JSONDecoder().decode(JSONValue.self, from: response.body)
        return Answer(ok: json["ok"] == .bool(true), payload: json["payload"], error: json["error"])
    }

    func stop() {
        process.signal(SIGTERM)
        process.wait()
    }

    deinit { process.killIfRunning() }

    func kill() {
        process.signal(SIGKILL)
        process.wait()
    }
}

/// A `node.invoke` with `hold` (issue 25) asked through gateway-sim on a thread of its own: the
/// answer comes when the node can run it, or when holding ends.
final class HeldCall: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let answer = NIOLockedValueBox<SimulatedGateway.Answer?>(nil)

    /// `canvas.hide` by default: it needs the foreground, is declared by node-sim and granted.
    init(_ stack: RelayStack, command: String = "canvas.hide", holdMs: Int = 30000, key: String? = nil) {
        var body: [String: JSONValue] = ["nodeId": .string(stack.nodeID), "command": .string(command), "hold": ["maxMs": .number(Double(holdMs))]]
        if let key { body["idempotencyKey"] = .string(key) }
        Thread.detachNewThread { [self, body] in
            answer.withLockedValue { $0 = try? stack.gateway.call("POST", "/invoke", body: .object(body)) }
            done.signal()
        }
    }

    func wait() -> SimulatedGateway.Answer? {
        done.wait()
        return answer.withLockedValue { $0 }
    }
}

/// Gateway, bridge and one paired node-sim, all real processes; the link is up when `init` returns.
final class RelayStack: @unchecked Sendable {
    let gateway: SimulatedGateway
    let bridge: BridgeDaemon
    let node: SimulatedNode
    let nodeID: String

    /// If a later part fails to start, the earlier ones are stopped by their deinit.
    init(
        config: String? = nil, bridgeArguments: [String] = [], nodeArguments: [String] = [], nodeExecutable: URL? = nil,
        bridgeEnvironment: [String: String] = [:], gatewayToken: String? = nil, bridgeLauncher: [String] = [],
        state: TemporaryDirectory = TemporaryDirectory("bridge")
    ) throws {
        let gatewayDirectory = TemporaryDirectory("gateway")
        gateway = try SimulatedGateway(tokenFile: gatewayToken.map { writeTokenFile($0, in: gatewayDirectory) }, directory: gatewayDirectory)
        var arguments = gateway.bridgeArguments + bridgeArguments
        if let config {
            let file = state.url.appendingPathComponent("config.json")
            try Data(config.utf8).write(to: file)
            arguments += ["--config", file.path]
        }
        bridge = try BridgeDaemon(state: state, arguments: arguments, launcher: bridgeLauncher, environment: bridgeEnvironment)
        try gateway.waitFor("bridge connected")
        node = try SimulatedNode(port: bridge.port, arguments: ["--name", "phone"] + nodeArguments, executable: nodeExecutable)
        nodeID = try node.pair(with: bridge)
        try gateway.waitForEvent("connected")
    }

    /// The node goes to the background, and the gateway has heard it.
    func backgroundNode() throws {
        node.process.write(line: "bg")
        try gateway.waitForEvent("background")
    }

    /// `lanbridge nodes ARGS --state-dir …`.
    @discardableResult
    func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try CLI.run(arguments + ["--state-dir", bridge.state.path])
    }

    func stop() {
        node.stop()
        bridge.stop()
        gateway.stop()
    }
}
