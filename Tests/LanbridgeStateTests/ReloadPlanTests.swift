import LanbridgeCrypto
import LanbridgeState
import Testing

/// Issue 62 §1: what a SIGHUP applies now and what waits for a restart, decided alone (it was
/// decided inside the daemon's reload loop, with no test of its own).
struct ReloadPlanTests {
    let running = BridgeSettings()

    @Test func nothingChangedSaysSo() {
        let plan = ReloadPlan(running: running, token: nil, read: running, token: nil)
        #expect(plan.changes.isEmpty && plan.kept.isEmpty && plan.afterRestart.isEmpty && plan.newToken == nil)
        #expect(plan.settings.limits == running.limits && plan.settings.policy == running.policy)
    }

    @Test func theMessageSizesKeepTheirRunningValueAndTheRestApplies() {
        var read = running
        read.limits[.maxResultBytes] = running.limits[.maxResultBytes] * 2
        read.limits[.maxConcurrentInvokes] = 3
        let plan = ReloadPlan(running: running, token: nil, read: read, token: nil)
        #expect(plan.settings.limits[.maxResultBytes] == running.limits[.maxResultBytes], "the transports were sized by it")
        #expect(plan.settings.limits[.maxConcurrentInvokes] == 3)
        #expect(plan.kept == ["maxResultBytes"] && plan.changes == ["limits"])
        #expect(plan.afterRestart.count == 1 && plan.afterRestart[0].hasPrefix("maxResultBytes applies after a restart"))
    }

    @Test func aNewTokenIsHandedOnAndAnUnchangedOneIsNot() {
        let old = SecureBytes(copying: Array("one".utf8)), same = SecureBytes(copying: Array("one".utf8)), new = SecureBytes(copying: Array("two".utf8))
        #expect(ReloadPlan(running: running, token: old, read: running, token: same).newToken == nil)
        let plan = ReloadPlan(running: running, token: old, read: running, token: new)
        #expect(plan.changes == ["gateway token"] && plan.newToken?.withUnsafeBytes { Array($0) } == Array("two".utf8))
    }

    @Test func theGatewayAdmissionAndTheDoorsWaitForARestartAndSaySo() {
        var read = running
        read.gateway.url = "ws://127.0.0.1:1"
        read.canvas.listen = ":19000"
        let plan = ReloadPlan(running: running, token: nil, read: read, token: nil)
        #expect(plan.changes.isEmpty, "neither is applied now")
        #expect(plan.afterRestart.count == 2)
        #expect(plan.afterRestart.contains { $0.contains("gateway's URL") } && plan.afterRestart.contains { $0.contains("canvas relay's address") })
    }

    @Test func accessRulesApplyNow() {
        var read = running
        read.defaultsAdd = ["ios": ["camera.snap"]]
        #expect(ReloadPlan(running: running, token: nil, read: read, token: nil).changes == ["access rules"])
    }
}
