import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Testing

/// Issue 26: the catalogue's two kinds of command, the everyday platform defaults, and what an
/// approval or invite grants on purpose.
struct ApprovalGrantTests {
    static let platforms = ["ios", "android", "macos", "linux", "windows"]

    /// Issue 52 §2: between granting and withholding, "ask each time": the sensitive commands the
    /// node declares become ask rules, and named patterns too; withheld stays the default.
    @Test func askSensitiveAsksEachTimeInsteadOfWithholding() throws {
        let declared = ["camera.snap", "location.get", "device.echo", "canvas.hide"]
        let defaults = AccessRules(allow: ["canvas.*"])
        let asked = ApprovalGrant(ask: ["device.echo"], askSensitive: true).rules(defaults: defaults, declared: declared)
        #expect(asked.ask == ["device.echo", "camera.snap", "location.get"] && asked.allow == ["canvas.*"])
        #expect(ApprovalGrant.withheld(asked, declared: declared).isEmpty, "asked is not withheld")
        #expect(ApprovalGrant().rules(defaults: defaults, declared: declared).ask.isEmpty, "the default still withholds")
        // An invite written before 0.10.0 reads as it was; an unused ask writes 0.9.0's shape.
        let old = try JSONDecoder().decode(ApprovalGrant.self, from: Data(#"{"allow": ["device.echo"], "allowSensitive": false}"#.utf8))
        #expect(old == ApprovalGrant(allow: ["device.echo"]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(old), as: UTF8.self) == #"{"allow":["device.echo"],"allowSensitive":false}"#)
    }

    @Test func theCatalogueSaysWhichCommandsAreSensitive() {
        let sensitive = Set(CommandCatalog.table.filter { $0.sensitive != nil }.map(\.name))
        #expect(
            sensitive == [
                "camera.snap", "camera.clip", "screen.record", "screen.snapshot", "screen.tap", "screen.type",
                "input.tap", "input.type", "input.key", "location.get", "sms.send", "voice.start", "voice.stop", "system.run",
                "notifications.changed", "canvas.eval",
            ])
        #expect(CommandCatalog.sensitivity(of: "sms.send") == .sendsAsTheUser && CommandCatalog.sensitivity(of: "system.run") == .runsCode)
        // Issue 48 §2: a script the agent runs in the canvas is not held to the relay's CSP.
        #expect(CommandCatalog.sensitivity(of: "canvas.eval") == .scriptsTheCanvas && CommandCatalog.sensitivity(of: "my.custom") == nil)
        #expect(CommandCatalog.isSensitive(pattern: "camera.*") && CommandCatalog.isSensitive(pattern: "*") && CommandCatalog.isSensitive(pattern: "canvas.*"))
        #expect(!CommandCatalog.isSensitive(pattern: "canvas.a2ui.*") && !CommandCatalog.isSensitive(pattern: "camera.list"))
        #expect(Set(CommandCatalog.builtIn).count == CommandCatalog.table.count, "one row per command")
    }

    @Test(arguments: platforms)
    func platformDefaultsHoldOnlyEverydayCommands(platform: String) {
        let defaults = AccessRules.defaults(forPlatform: platform)
        #expect(!defaults.allow.contains(where: CommandCatalog.isSensitive), "\(platform): \(defaults.allow)")
    }

    @Test func theDefaultGrantPerPlatform() {
        let canvas = ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot", "canvas.a2ui.*"]
        #expect(AccessRules.defaults(forPlatform: "ios").allow == canvas + ["camera.list"])
        #expect(AccessRules.defaults(forPlatform: "Android").allow == canvas + ["camera.list"])
        #expect(AccessRules.defaults(forPlatform: "macos").allow == canvas + ["camera.list", "system.info"])
        #expect(AccessRules.defaults(forPlatform: "linux").allow == canvas + ["system.info"])
        #expect(!CompiledRules(.defaults(forPlatform: "ios")).allows("canvas.eval") && CompiledRules(.defaults(forPlatform: "ios")).allows("canvas.a2ui.pushJSONL"))
        #expect(AccessRules.defaults(forPlatform: "windows").allow.isEmpty)
    }

    let declared = ["canvas.present", "camera.list", "camera.snap", "location.get", "system.info"]

    @Test func withoutFlagsSensitiveCommandsAreWithheldAndSaidWhy() {
        let rules = ApprovalGrant().rules(defaults: .defaults(forPlatform: "ios"), declared: declared)
        #expect(rules.allow == AccessRules.everydayCanvas + ["camera.list"] && rules.confirmed.isEmpty)
        let withheld = ApprovalGrant.withheld(rules, declared: declared)
        #expect(withheld.map(\.command) == ["camera.snap", "location.get", "system.info"])
        #expect(withheld.map(\.sensitive) == [true, true, false])
        #expect(withheld[0].reason.contains("captures") && withheld[2].reason == "not in this platform's defaults")
    }

    @Test func allowNamesAndAllowSensitiveGrantOnPurposeAndRecordIt() {
        let named = ApprovalGrant(allow: ["camera.snap", "system.info"]).rules(defaults: .defaults(forPlatform: "ios"), declared: declared)
        #expect(named.allow == AccessRules.everydayCanvas + ["camera.list", "camera.snap", "system.info"] && named.confirmed == ["camera.snap"])
        #expect(ApprovalGrant.withheld(named, declared: declared).map(\.command) == ["location.get"])

        let all = ApprovalGrant(allowSensitive: true).rules(defaults: .defaults(forPlatform: "ios"), declared: declared)
        #expect(all.allow == AccessRules.everydayCanvas + ["camera.list", "camera.snap", "location.get"] && all.confirmed == ["camera.snap", "location.get"])

        // The operator's config adding a sensitive default is a choice on purpose too.
        var config = AccessRules.defaults(forPlatform: "ios")
        config.allow.append("camera.snap")
        #expect(ApprovalGrant().rules(defaults: config, declared: declared).confirmed == ["camera.snap"])
    }

    @Test func anInviteGrantsItsExtrasAtRedemptionAndAnOldInviteItsExactRules() throws {
        var state = PairingState()
        let secret = state.createInvite(name: nil, grant: ApprovalGrant(allow: ["camera.snap"]), ttl: 600, now: Date())
        let id = state.invites.invites[0].id
        let key = try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey))
        let node = try state.redeemInvite(
            id: try Hex.decode(id), secret: secret, key: key,
            details: NodeDetails(displayName: "p", platform: "ios", commands: declared), now: Date())
        #expect(node.access.allow == AccessRules.everydayCanvas + ["camera.list", "camera.snap"] && node.access.confirmed == ["camera.snap"])

        // An invite written before 0.8.0 named the exact rules.
        var old = PairingState()
        let oldSecret = old.createInvite(name: nil, ttl: 600, now: Date())
        old.invites.invites[0].grant = nil
        old.invites.invites[0].allow = ["canvas.present", "location.get"]
        let oldKey = try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey))
        let oldNode = try old.redeemInvite(
            id: try Hex.decode(old.invites.invites[0].id), secret: oldSecret, key: oldKey,
            details: NodeDetails(displayName: "p", platform: "ios", commands: declared), now: Date())
        #expect(oldNode.access.allow == ["canvas.present", "location.get"] && oldNode.access.confirmed == ["location.get"])
    }

    @Test func oldDefaultGrantsAreFlaggedUntilConfirmedOrDenied() throws {
        var state = PairingState()
        let key = try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey))
        let request = try state.requestPairing(key: key, details: NodeDetails(displayName: "Ada", platform: "ios", commands: declared), source: nil, now: Date())
        state.setCode("123456", requestId: request.requestId)
        let old = AccessRules(allow: AccessRules.defaultsUpTo070(forPlatform: "ios"))
        let node = try state.approve(requestId: request.requestId, code: "123456", access: old, now: Date())
        // canvas.* holds canvas.eval, sensitive since 0.10.0: flagged, never silently taken away.
        #expect(node.grantedByOldDefault == ["canvas.*", "camera.snap", "screen.record", "location.get"])

        let denied = try state.deny("location.get", node: node.nodeId.description)
        #expect(denied.grantedByOldDefault == ["canvas.*", "camera.snap", "screen.record"])
        let confirmed = try state.confirmDefaults(node: node.nodeId.description)
        #expect(confirmed.grantedByOldDefault.isEmpty && confirmed.access.allow.contains("camera.snap"))
        #expect(confirmed.access.confirmed == ["canvas.*", "camera.snap", "screen.record"])
        // Taking a confirmed grant away forgets the confirmation with it.
        let removed = try state.removeRule("camera.snap", kind: .allow, node: node.nodeId.description)
        #expect(removed.access.confirmed == ["canvas.*", "screen.record"])
    }

    @Test func confirmedIsOmittedFromTheFileWhenEmpty() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(AccessRules(allow: ["canvas.*"])), as: UTF8.self) == #"{"allow":["canvas.*"],"deny":[]}"#)
        let decoded = try JSONDecoder().decode(AccessRules.self, from: Data(#"{"allow":["camera.snap"],"deny":[],"confirmed":["camera.snap"]}"#.utf8))
        #expect(decoded.confirmed == ["camera.snap"])
    }
}
