import Foundation
import LanbridgeProtocol
import NIOConcurrencyHelpers
import Testing
import TestSupport

/// Issue 23: a cancel reaches the node's handler, through §12's `node.invoke.cancel` and through
/// OpenClaw's `node.invoke.cancel` event, not only the bridge's waiting.
struct CancelEndToEndTests {
    @Test func aGatewaysCancelStopsTheNodesHandler() throws {
        let stack = try RelayStack(config: #"{"access": {"defaults": {"*": {"add": ["device.echo"]}}}}"#)
        defer { stack.stop() }
        let gateway = stack.gateway, nodeID = stack.nodeID
        // On a thread of its own: a blocking call in a Task could wait for a pool thread that
        // other tests' blocking waits hold (it did, once, in a full run on 2 cores).
        let answered = DispatchSemaphore(value: 0)
        let slow = NIOLockedValueBox<Result<SimulatedGateway.Answer, any Error>?>(nil)
        Thread.detachNewThread {
            slow.withLockedValue {
                $0 = Result {
                    try gateway.call(
                        "POST", "/invoke",
                        body: [
                            "nodeId": .string(nodeID), "command": "device.echo",
                            "params": ["delayMs": 60000], "idempotencyKey": "slow-1",
                        ])
                }
            }
            answered.signal()
        }
        try stack.node.waitFor("invoke")
        let cancel = try gateway.call("POST", "/cancel", body: ["nodeId": .string(nodeID), "idempotencyKey": "slow-1"])
        #expect(cancel.ok && cancel.payload?["cancelled"] == true)
        #expect(answered.wait(timeout: .now() + 30) == .success, "the invoke was answered")
        let answer = try #require(slow.withLockedValue { $0 }).get()
        #expect(answer.code == ErrorMessage.cancelled, "\(String(describing: answer.error))")
        #expect(try stack.node.waitFor("cancelled") == "device.echo", "the node's handler saw it")
        let again = try gateway.call("POST", "/cancel", body: ["nodeId": .string(nodeID), "idempotencyKey": "slow-1"])
        #expect(again.ok && again.payload?["cancelled"] == false, "nothing left to cancel")
        let both = try gateway.call("POST", "/cancel", body: ["nodeId": .string(nodeID), "idempotencyKey": "k", "id": "7"])
        #expect(both.code == ErrorMessage.invalidRequest)
        #expect(try gateway.invoke(nodeID, "device.echo", params: ["x": 1]).ok, "the node goes on answering")
    }

    @Test(.enabled(if: Python.hasModule("websockets") && Python.hasModule("cryptography"), "needs Python's websockets and cryptography"))
    func anOpenClawCancelStopsTheNodesHandler() throws {
        let stack = try OpenClawEndToEndTests.Stack()
        stack.gateway.command(#"invoke \#(stack.device) canvas.snapshot {"delayMs":60000} 90000"#)
        let invokeID = try stack.gateway.waitFor("invoking")[0]
        try stack.node.waitFor("invoke")
        stack.gateway.command("cancel \(invokeID)")
        #expect(try stack.node.waitFor("cancelled") == "canvas.snapshot")
        try stack.bridge.waitForLog("the gateway cancelled an invoke")
    }
}
