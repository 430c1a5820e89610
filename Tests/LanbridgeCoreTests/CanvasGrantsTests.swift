@testable import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Testing

struct CanvasGrantsTests {
    let node = PublicKey(bytes: Array(repeating: 7, count: 32))!.fingerprint
    let other = PublicKey(bytes: Array(repeating: 9, count: 32))!.fingerprint

    @Test func aCapabilitySlidesOnUseLapsesUnusedAndDiesWithItsNode() {
        var grants = CanvasGrants()
        let t0 = Moment(seconds: 1000)
        let limits = BridgeSettings().limits
        grants.grant("capability-one-xxxxxxxxx", node: node, expires: t0 + 600)
        #expect(grants.use("capability-one-xxxxxxxxx", now: t0 + 500, ttl: 600, limits: limits) == .granted(node))
        // Used at 500 s: good until 1,100 s.
        #expect(grants.use("capability-one-xxxxxxxxx", now: t0 + 1000, ttl: 600, limits: limits) == .granted(node))
        #expect(grants.use("capability-one-xxxxxxxxy", now: t0 + 1000, ttl: 600, limits: limits) == .unknown)
        #expect(grants.use("capability-one-xxxxxxxxx", now: t0 + 1601, ttl: 600, limits: limits) == .expired)
        #expect(grants.use("capability-one-xxxxxxxxx", now: t0 + 1602, ttl: 600, limits: limits) == .unknown)

        grants.grant("capability-two-xxxxxxxxx", node: node, expires: t0 + 600)
        grants.grant("capability-oth-xxxxxxxxx", node: other, expires: t0 + 600)
        // A new grant for the node replaces its old one.
        grants.grant("capability-thr-xxxxxxxxx", node: node, expires: t0 + 600)
        #expect(grants.use("capability-two-xxxxxxxxx", now: t0, ttl: 600, limits: limits) == .unknown)
        grants.revoke(node)
        #expect(grants.use("capability-thr-xxxxxxxxx", now: t0, ttl: 600, limits: limits) == .unknown)
        #expect(grants.use("capability-oth-xxxxxxxxx", now: t0, ttl: 600, limits: limits) == .granted(other))
        #expect(grants.count == 1)
    }

    @Test func aNodesRequestsAreRateLimited() {
        var grants = CanvasGrants()
        var limits = BridgeSettings().limits
        limits[.canvasRequestsPerMinute] = 60  // a burst of 12
        let t0 = Moment(seconds: 10)
        grants.grant("c", node: node, expires: t0 + 600)
        let outcomes = (0..<20).map { _ in grants.use("c", now: t0, ttl: 600, limits: limits) }
        #expect(outcomes.filter { $0 == CanvasGrants.Lookup.granted(node) }.count == 12 && outcomes.last == CanvasGrants.Lookup.rateLimited)
        #expect(grants.use("c", now: t0 + 1, ttl: 600, limits: limits) == .granted(node))  // one a second refills
    }

    @Test func mintedCapabilitiesAreOpenClawsShape() {
        let capability = CanvasGrants.mint(Array(0..<18))
        #expect(capability.utf8.count == 24 && capability.utf8.allSatisfy { CanvasRequest.isCapabilityByte($0) })
        #expect(CanvasGrants.mint(Array(repeating: 0xFF, count: 18)) == String(repeating: "_", count: 24))
    }
}
