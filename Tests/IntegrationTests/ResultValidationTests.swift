import Foundation
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// A paired node's results are checked before they reach the gateway (strict JSON, one reader),
/// and a malformed one fails its invoke at once with a clear error.
@Suite(.serialized)
struct ResultValidationTests {
    static let templates = [
        "system.info=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":01}"#,
        "system.notify=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":"\q"}"#,
        "location.get=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":"{ff}"}"#,
        "camera.list=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":[tru]}"#,
        "sms.send=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":{"a":1,"a":2}}"#,
        "voice.start=" + #"{"type":"invoke.result","id":"{id}","ok":true,"payload":{{nl}  "a": [1,{nl}  2],{nl}  "b": {"type":"res","id":"2","ok":true}{nl}}}"#,
        "voice.stop=" + #"{"type":"invoke.result","ok":true,"payload":NaN,"id":"{id}"}"#,
    ]

    /// The gateway, the bridge and a hostile node paired by invite; returns its node ID.
    func stack(_ extra: [String] = []) throws -> (SimulatedGateway, BridgeDaemon, ChildProcess, String) {
        let gateway = try SimulatedGateway()
        let bridge = try BridgeDaemon(arguments: gateway.bridgeArguments)
        try gateway.waitFor("bridge connected")
        let allow = "system.info,system.notify,location.get,camera.list,sms.send,voice.start,voice.stop,device.echo"
        let uri = try CLI.json(
            Invite.self,
            [
                "invite", "--host", "127.0.0.1", "--port", String(bridge.port), "--allow", allow,
                "--state-dir", bridge.state.path,
            ]
        ).uri
        let node = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/hostile_node.py").path, uri] + extra + Self.templates)
        let id = String(try node.waitForLine { $0.hasPrefix("paired ") }.dropFirst("paired ".count))
        try gateway.waitForEvent("connected")
        return (gateway, bridge, node, id)
    }

    struct Invite: Decodable { let uri: String }

    @Test func malformedResultsFailAtOnceAndNeverReachTheGateway() throws {
        let (gateway, bridge, node, id) = try stack()
        defer { node.signal(SIGKILL); bridge.stop(); gateway.stop() }
        for command in ["system.info", "system.notify", "location.get", "camera.list", "sms.send"] {
            // A generous timeout: TIMEOUT instead of INVALID_RESULT would mean the invoke hung.
            let answer = try gateway.invoke(id, command, timeoutMs: 60_000)
            #expect(answer.code == ErrorMessage.invalidResult, "\(command): \(String(describing: answer.error))")
            #expect(answer.error?["details"]?["nodeId"]?.stringValue == id && answer.error?["details"]?["command"]?.stringValue == command)
        }
        // The id after the bad payload cannot be read: the node's invokes in flight fail at once all the same.
        #expect(try gateway.invoke(id, "voice.stop", timeoutMs: 60_000).code == ErrorMessage.invalidResult)
        let echo = try gateway.invoke(id, "device.echo", params: ["x": 1])
        #expect(echo.ok && echo.payload?["echo"]?["x"] == 1, "the link and the node are still fine")
    }

    /// A pretty-printed result through the control socket stays one frame on one line, so a result
    /// cannot forge a second answer for a pipelined request.
    @Test func theControlSocketKeepsOneFramePerLine() throws {
        let (gateway, bridge, node, id) = try stack()
        defer { node.signal(SIGKILL); bridge.stop(); gateway.stop() }
        let invoked = try CLI.run(["nodes", "invoke", "--node", id, "--command", "voice.start", "--json", "--state-dir", bridge.state.path])
        #expect(invoked.status == 0, "\(invoked.stderr)")
        let socket = bridge.state.file("control.sock").path
        let requests = [
            #"{"type":"req","id":"1","method":"node.invoke","params":{"nodeId":"\#(id)","command":"voice.start","idempotencyKey":"k1"}}"#,
            #"{"type":"req","id":"2","method":"node.list","params":{}}"#,
        ]
        let socat = try ChildProcess(URL(fileURLWithPath: "/usr/bin/socat"), ["-t", "5", "-", "UNIX-CONNECT:\(socket)"], standardInput: true)
        requests.forEach { socat.write(line: $0) }
        let first = try #require(try socat.nextLine(timeout: 30)), second = try #require(try socat.nextLine(timeout: 30))
        socat.closeStandardInput()
        let answers = try [first, second].map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        #expect(answers.map { $0["id"] } == ["1", "2"], "\(first)\n\(second)")
        #expect(answers[0]["payload"]?["b"]?["id"] == "2", "the lookalike frame is data inside the first answer")
        #expect(answers[1]["payload"]?["nodes"] != nil)
    }

    /// State and event floods are limited per node: 400 state flips and 3000 events do not all
    /// reach the gateway, the latest state does, and oversized events never do.
    @Test func stateAndEventFloodsAreLimitedAndTheLatestStateWins() throws {
        let (gateway, bridge, node, id) = try stack(["flood=400,3000,100"])
        defer { node.signal(SIGKILL); bridge.stop(); gateway.stop() }
        _ = try node.waitForLine { $0 == "flooded" }
        try bridge.waitForLog("dropped an event from this node")  // at once
        try bridge.waitForLog("state changes from this node coalesced")  // at the next tick
        // The echo's answer comes after every event the bridge relayed (one ordered link).
        #expect(try gateway.invoke(id, "device.echo", params: ["x": 2]).ok)
        let described = try gateway.call("GET", "/nodes/\(id)")
        #expect(described.payload?["foreground"] == false, "the last state the node sent")
        // Every event relayed before the node leaves is printed before its "disconnected".
        node.signal(SIGKILL)
        var states = 0, events = 0, huge = 0
        while let line = try gateway.process.nextLine() {
            guard line.hasPrefix("event ") else { continue }
            if line.contains("\"type\":\"disconnected\"") { break }
            if line.contains("\"type\":\"background\"") || line.contains("\"type\":\"foreground\"") { states += 1 }
            if line.contains("\"event\":\"flood\"") { events += 1 }
            if line.contains("\"event\":\"huge\"") { huge += 1 }
        }
        #expect(states < 100, "\(states) state events for 400 changes")
        #expect(events > 0 && events < 1000, "\(events) of 3000 events relayed")
        #expect(huge == 0, "an event over maxEventBytes is dropped")
    }

    /// An idempotency key answers only the request it was made for; command names are short ASCII.
    @Test func idempotencyKeysAreBoundAndCommandNamesChecked() throws {
        let (gateway, bridge, node, id) = try stack()
        defer { node.signal(SIGKILL); bridge.stop(); gateway.stop() }
        func invoke(_ node: String, _ command: String, key: String, params: JSONValue = [:]) throws -> SimulatedGateway.Answer {
            try gateway.call("POST", "/invoke", body: ["nodeId": .string(node), "command": .string(command), "params": params, "idempotencyKey": .string(key)])
        }
        let first = try invoke(id, "device.echo", key: "k1", params: ["n": 1])
        #expect(first.ok)
        #expect(try invoke(id, "device.echo", key: "k1", params: ["n": 1]).payload == first.payload, "a true retry gets the same answer")
        for (node, command, params) in [(id, "device.echo", ["n": 2] as JSONValue), (id, "system.info", [:]), ("NOBODY", "device.echo", ["n": 1])] {
            let reuse = try invoke(node, command, key: "k1", params: params)
            #expect(
                reuse.code == ErrorMessage.invalidRequest && reuse.error?["message"]?.stringValue?.contains("different request") == true,
                "\(command) \(params)")
        }
        let long = try gateway.invoke(id, "device." + String(repeating: "x", count: 200_000))
        #expect(long.code == ErrorMessage.invalidRequest)
        let joiner = try gateway.invoke(id, "device.ec\u{200D}ho")
        #expect(joiner.code == ErrorMessage.invalidRequest)
        #expect(try AuditLog(directory: StateDirectory(url: bridge.state.url)).entries().allSatisfy { ($0.detail?.utf8.count ?? 0) < 1000 })
    }
}
