import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// The Python node package (sdk/python, `lanbridge_node`) and its example node against the
/// real daemon and the reference gateway: pair by code through the CLI, answer invokes, leave
/// when revoked.
@Suite(.enabled(if: Python.hasModule("noise"), "needs the Python noiseprotocol package (scripts/setup installs it)"))
struct PythonNodeTests {
    @Test func theExampleNodePairsAnswersAndLeavesWhenRevoked() throws {
        let gateway = try SimulatedGateway()
        defer { gateway.stop() }
        let bridge = try BridgeDaemon(arguments: gateway.bridgeArguments)
        defer { bridge.stop() }
        let state = TemporaryDirectory("python-node")
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = Repository.url("sdk/python").path
        let node = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [
                "-u", Repository.url("examples/python-node/lanbridge_example_node.py").path, "--state-dir", state.path,
                "--connect", "127.0.0.1:\(bridge.port)", "--name", "Python node",
            ],
            environment: environment, mergeStandardError: true)
        defer { node.killIfRunning() }

        let id = String(try node.waitForLine(timeout: 30) { $0.hasPrefix("node ") }.dropFirst("node ".count))
        let code = try node.waitForLine(timeout: 30) { $0.hasPrefix("code ") }.split(separator: " ")
        let approval = try CLI.run(["nodes", "approve", String(code[3]), "--code", String(code[1]), "--state-dir", bridge.state.path])
        #expect(approval.status == 0, "\(approval.stderr)")
        #expect(try node.waitForLine(timeout: 30) { $0.hasPrefix("paired ") } == "paired \(id)")
        _ = try node.waitForLine(timeout: 30) { $0.hasPrefix("connected ") }

        for command in ["device.echo", "system.info"] {
            #expect(try CLI.run(["nodes", "allow", id, command, "--state-dir", bridge.state.path]).status == 0)
        }
        let echo = try gateway.invoke(id, "device.echo", params: .object(["text": .string("héllo")]))
        #expect(echo.ok && echo.payload == .object(["text": .string("héllo")]), "\(echo)")
        let info = try gateway.invoke(id, "system.info")
        #expect(info.ok && info.payload?["system"]?.stringValue == "Linux" && info.payload?["python"] != nil, "\(info)")
        // Declared but not allowed: refused at the bridge, never reaching Python; allowed, it runs
        // (without notify-send it says so rather than failing).
        let refused = try gateway.invoke(id, "system.notify")
        #expect(refused.code == "FORBIDDEN" && refused.error?["details"]?["reason"]?.stringValue == "NOT_ALLOWLISTED")
        #expect(try CLI.run(["nodes", "allow", id, "system.notify", "--state-dir", bridge.state.path]).status == 0)
        let notify = try gateway.invoke(id, "system.notify", params: .object(["title": .string("t"), "body": .string("b")]))
        #expect(notify.ok && notify.payload?["shown"] != nil, "\(notify)")

        #expect(try CLI.run(["nodes", "revoke", id, "--state-dir", bridge.state.path]).status == 0)
        _ = try node.waitForLine(timeout: 30) { $0.hasPrefix("fatal ") }
        #expect(node.wait() == 1)
        #expect(!FileManager.default.fileExists(atPath: state.file("bridge.json").path), "revocation forgets the pin")
    }
}
