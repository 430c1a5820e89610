import LanbridgeProtocol
import Testing

struct OpenClawSurfaceTests {
    @Test func theFirstSurfaceIsApprovedWithTheDevice() {
        var surface = OpenClawSurface(approved: nil)
        let changed = surface.sessionUp(offering: ["canvas.snapshot"])
        #expect(changed, "to be stored")
        #expect(surface.approved == ["canvas.snapshot"] && surface.awaiting.isEmpty)
    }

    @Test func addedCommandsWaitUntilTheGatewayFirstInvokesOne() {
        var surface = OpenClawSurface(approved: ["canvas.snapshot"])
        let stored = surface.sessionUp(offering: ["canvas.snapshot", "device.info", "location.get"])
        #expect(!stored)
        #expect(surface.awaiting == ["device.info", "location.get"])
        let byApproved = surface.invoked("canvas.snapshot")
        #expect(!byApproved, "an approved command proves nothing")
        let byAdded = surface.invoked("location.get")
        #expect(byAdded)
        #expect(surface.approved == ["canvas.snapshot", "device.info", "location.get"], "a request is approved whole")
        #expect(surface.awaiting.isEmpty)
    }

    @Test func aNarrowerSurfaceNeedsNoApprovalAndForgetsNothing() {
        var surface = OpenClawSurface(approved: ["canvas.snapshot", "device.info"])
        _ = surface.sessionUp(offering: ["device.info"])
        #expect(surface.awaiting.isEmpty && surface.approved == ["canvas.snapshot", "device.info"])
        _ = surface.sessionUp(offering: ["canvas.snapshot", "device.info"])
        #expect(surface.awaiting.isEmpty, "widening back to what was approved asks nothing")
    }
}
