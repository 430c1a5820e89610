import Foundation
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import TestSupport

/// A real `lanbridge serve` on loopback, with its own state directory.
final class BridgeDaemon: @unchecked Sendable {
    let state: TemporaryDirectory
    let process: ChildProcess
    let port: Int

    /// Without `mdns`, the daemon does not advertise: only the discovery tests' isolated LAN should
    /// ever carry mDNS, and they run their own daemons there.
    init(
        state: TemporaryDirectory = TemporaryDirectory("bridge"), port: Int = 0, arguments: [String] = [],
        mdns: Bool = false, launcher: [String] = [], bind: String = "loopback", name: String = "test-bridge",
        environment: [String: String] = [:], console: Bool = false
    ) throws {
        self.state = state
        // Test daemons run side by side: the console, when a test wants it, on a port of its own.
        let ui = arguments.contains("--ui-listen") ? [] : console ? ["--ui-listen", "127.0.0.1:0"] : ["--no-ui"]
        let serve = ["serve", "--state-dir", state.path, "--bind", bind, "--port", String(port), "--name", name] + (mdns ? [] : ["--no-mdns"]) + ui + arguments
        process = try launch("lanbridge", serve, launcher: launcher, mergeStandardError: true, environment: environment)
        var metricsPort: Int?, consoleURL: String?
        let line = try process.waitForLine(timeout: 30) { line in
            if line.contains("metrics endpoint listening"), let url = line.split(separator: " ").first(where: { $0.hasPrefix("metrics=") }) {
                metricsPort = Int(url.split(separator: ":").last!.prefix { $0.isNumber })
            }
            if line.contains("console listening"), let url = line.split(separator: " ").first(where: { $0.hasPrefix("console=") }) {
                consoleURL = String(url.dropFirst("console=".count).dropLast())  // without the trailing "/"
            }
            return line.contains("lanbridge listening")
        }
        let address = line.split(separator: " ").first { $0.hasPrefix("address=") }!
        self.port = Int(address.split(separator: ":").last!.prefix { $0.isNumber })!
        self.metricsPort = metricsPort
        self.consoleURL = consoleURL
    }

    /// The port of `/metrics` and `/healthz`, when started with `--metrics-listen`.
    let metricsPort: Int?
    /// The console's base URL (`http://127.0.0.1:PORT`), when started with `console: true`.
    let consoleURL: String?

    var store: PairingStore { PairingStore(directory: StateDirectory(url: state.url)) }

    /// Waits for a log line containing `text` (an event, with a hang guard).
    @discardableResult
    func waitForLog(_ text: String) throws -> String {
        try process.waitForLine(timeout: 30) { $0.contains(text) }
    }

    /// The same, all within `seconds` however much else the daemon logs meanwhile.
    @discardableResult
    func waitForLog(_ text: String, within seconds: TimeInterval) throws -> String {
        try process.waitForLine(within: seconds) { $0.contains(text) }
    }

    /// Waits until runtime.json says what `condition` wants: it is written off the relay loop a
    /// moment after the change it shows (a node's welcome goes out first).
    @discardableResult
    func waitForRuntime(_ what: String, _ condition: @escaping (RuntimeStatus) -> Bool) throws -> RuntimeStatus {
        let file = RuntimeStatusFile(directory: StateDirectory(url: state.url))
        var shown: RuntimeStatus?
        guard
            try DirectoryWatcher(state.url).wait(
                timeout: 30,
                until: {
                    shown = file.read().flatMap { condition($0) ? $0 : nil }
                    return shown != nil
                }), let shown
        else {
            throw RuntimeNeverShowed(description: "runtime.json never showed \(what)")
        }
        return shown
    }

    /// Everything the daemon logged so far.
    var log: String { process.output.joined(separator: "\n") }

    func logContains(_ text: String) -> Bool { process.output.contains { $0.contains(text) } }

    struct RuntimeNeverShowed: Error, CustomStringConvertible { let description: String }

    func stop() {
        process.signal(SIGTERM)
        process.wait()
    }

    /// A test that fails half-way must not leave its processes behind.
    deinit { process.killIfRunning() }
}

/// A real `lanbridge-node-sim`.
final class SimulatedNode: @unchecked Sendable {
    let state: TemporaryDirectory
    let process: ChildProcess

    /// `executable`: another build of node-sim (the swift-crypto one) instead of this build's.
    init(
        state: TemporaryDirectory = TemporaryDirectory("node"), port: Int? = nil, arguments: [String] = [], launcher: [String] = [],
        executable: URL? = nil
    ) throws {
        self.state = state
        let connect = port.map { ["--connect", "127.0.0.1:\($0)"] } ?? []
        let all = ["--state-dir", state.path] + connect + arguments
        if let executable {
            process = try ChildProcess(executable, all, mergeStandardError: true, standardInput: true)
        } else {
            process = try launch("lanbridge-node-sim", all, launcher: launcher, mergeStandardError: true, standardInput: true)
        }
    }

    /// The next line starting with `prefix`, without the prefix.
    @discardableResult
    func waitFor(_ prefix: String) throws -> String {
        String(try process.waitForLine(timeout: 30) { $0.hasPrefix(prefix + " ") || $0 == prefix }.dropFirst(prefix.count).drop { $0 == " " })
    }

    /// Pairs by code through the CLI; returns the node ID.
    @discardableResult
    func pair(with bridge: BridgeDaemon) throws -> String {
        let id = try waitFor("node")
        let code = try waitFor("code").split(separator: " ")
        // Tests pair many nodes under node-sim's one default name: each is another device (--add;
        // without it a second of the same name is KEY CHANGED and waits for the operator's choice).
        let approval = try CLI.run(["nodes", "approve", String(code[2]), "--code", String(code[0]), "--add", "--state-dir", bridge.state.path])
        precondition(approval.status == 0, approval.stderr)
        try waitFor("connected")
        return id
    }

    func stop() {
        process.signal(SIGTERM)
        process.wait()
    }

    /// A test that fails half-way must not leave its processes behind.
    deinit { process.killIfRunning() }
}

enum CLI {
    static func run(_ arguments: [String], launcher: [String] = [], environment: [String: String] = [:]) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let child = try launch("lanbridge", arguments, launcher: launcher, environment: environment)
        var out: [String] = []
        while let line = try child.nextLine() { out.append(line) }
        let status = child.wait()
        return (status, out.joined(separator: "\n"), child.standardError)
    }

    static func json<T: Decodable>(_ type: T.Type, _ arguments: [String]) throws -> T {
        let result = try run(arguments + ["--json"])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(result.stdout.utf8))
    }
}

/// Starts one of this package's executables, optionally behind a launcher such as
/// `ip netns exec NAMESPACE` (the test LAN).
func launch(
    _ product: String, _ arguments: [String], launcher: [String] = [], mergeStandardError: Bool = false,
    standardInput: Bool = false, environment: [String: String] = [:]
) throws -> ChildProcess {
    let executable = ChildProcess.product(product)
    let environment = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
    return launcher.isEmpty
        ? try ChildProcess(executable, arguments, environment: environment, mergeStandardError: mergeStandardError, standardInput: standardInput)
        : try ChildProcess(
            URL(fileURLWithPath: launcher[0]), Array(launcher.dropFirst()) + [executable.path] + arguments,
            environment: environment, mergeStandardError: mergeStandardError, standardInput: standardInput)
}
