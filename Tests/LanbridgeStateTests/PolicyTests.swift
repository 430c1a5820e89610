import Foundation
import LanbridgeProtocol
import LanbridgeState
import Testing

struct CommandPatternTests {
    @Test func matching() throws {
        let canvas = try CommandPattern("canvas.*")
        #expect(canvas.matches("canvas.snapshot") && canvas.matches("canvas.a.b"))
        #expect(!canvas.matches("canvas") && !canvas.matches("canvasx.snapshot") && !canvas.matches("camera.snap"))
        #expect(try CommandPattern("*").matches("anything.at.all"))
        #expect(try CommandPattern("camera.snap").matches("camera.snap") && !(try CommandPattern("camera.snap").matches("camera.snap.x")))
    }

    /// Issue 37: OpenClaw's names have capitals (`canvas.a2ui.pushJSONL`). They are accepted, and
    /// two spellings of one name are one command everywhere a rule or a declaration is read.
    @Test func namesWithCapitalsAreOneCommandWhateverTheirCase() throws {
        #expect(try CommandPattern("canvas.a2ui.pushJSONL").matches("canvas.a2ui.pushjsonl"))
        #expect(try CommandPattern("Canvas.*").matches("canvas.a2ui.pushJSONL"))
        #expect(!(try CommandPattern("canvas.a2ui.push").matches("canvas.a2ui.pushJSONL")))
        #expect(CommandPattern.same("A.b", "a.B") && !CommandPattern.same("a.b", "a.c") && !CommandPattern.same("a", "a."))
        // '@' | 0x20 is '`': folding is for letters only.
        #expect(!CommandPattern.same("a@", "a`") && !CommandPattern.same("a[", "a{"))
        #expect(CommandPattern.key("canvas.a2ui.pushJSONL") == "canvas.a2ui.pushjsonl")

        let policy = AccessPolicy()
        let declared = ["canvas.a2ui.pushJSONL", "camera.snap"]
        // A deny in lowercase cannot be dodged by the node's capitals, nor the other way round.
        let lowerDeny = AccessRules(allow: ["canvas.*", "camera.snap"], deny: ["canvas.a2ui.pushjsonl", "CAMERA.SNAP"])
        #expect(
            policy.decide("canvas.a2ui.pushJSONL", rules: lowerDeny, declared: declared, flags: .init(), foreground: true)
                == .deny(.deniedByRule("canvas.a2ui.pushjsonl")))
        #expect(policy.decide("camera.snap", rules: lowerDeny, declared: declared, flags: .init(), foreground: true) == .deny(.deniedByRule("CAMERA.SNAP")))
        // Declared in one spelling, invoked in another: the same command.
        let allow = AccessRules(allow: ["canvas.a2ui.pushjsonl"])
        #expect(policy.decide("CANVAS.A2UI.PUSHJSONL", rules: allow, declared: declared, flags: .init(), foreground: true) == .allow)
        #expect(CommandCatalog.sensitivity(of: "Camera.Snap") == .captures)
        #expect((try? CommandCatalog().check("canvas.a2ui.pushJSONL")) != nil)
        // Offered to OpenClaw as OpenClaw spells it, whatever the node declared; and back.
        #expect(OpenClawCommands.openClawName("canvas.a2ui.pushjsonl") == "canvas.a2ui.pushJSONL")
        #expect(OpenClawCommands.lanbridgeName("canvas.a2ui.pushJSONL") == "canvas.a2ui.pushJSONL")
    }

    /// Issue 37: origin rules sit in the same lists as command patterns. A denied origin must not
    /// read as a broken command pattern (which denies every command), and a broken origin denies
    /// every origin, not every command.
    @Test func originRulesAreTheirOwnKindInTheSameLists() {
        let rules = CompiledRules(AccessRules(allow: ["canvas.*", "https://example.com"], deny: ["https://*.ads.example", "canvas.eval"]))
        #expect(rules.allow.map(\.description) == ["canvas.*"] && rules.deny.map(\.description) == ["canvas.eval"])
        #expect(rules.origins.allow.map(\.description) == ["https://example.com"] && rules.origins.deny.map(\.description) == ["https://*.ads.example"])
        #expect(!rules.originsBroken)
        #expect(AccessPolicy().decide("canvas.present", rules: rules, declared: ["canvas.present"], flags: .init(), foreground: true) == .allow)
        let broken = CompiledRules(AccessRules(allow: ["canvas.*"], deny: ["https://exa mple.com"]))
        #expect(broken.originsBroken && broken.deny.isEmpty)
        #expect(AccessPolicy().decide("canvas.present", rules: broken, declared: ["canvas.present"], flags: .init(), foreground: true) == .allow)
    }

    /// Issue 22: patterns match by bytes, without splitting the command, with the same answers as
    /// the segment-by-segment rule they replace (`*` as the last segment matches one or more).
    @Test func matchingByBytesAgreesWithMatchingBySegments() throws {
        func bySegments(_ pattern: String, _ command: String) -> Bool {
            let segments = pattern.split(separator: ".", omittingEmptySubsequences: false)
            let parts = command.split(separator: ".", omittingEmptySubsequences: false)
            guard segments.last == "*" else { return parts == segments }
            let fixed = segments.dropLast()
            return parts.count > fixed.count && zip(fixed, parts).allSatisfy { $0 == $1 }
        }
        let patterns = ["*", "a.*", "a.b.*", "a.b", "a", "ab.*", "a-b.c_d"]
        let commands = ["a", "a.b", "a.b.c", "ab", "ab.c", "a.bc", "b.a", "a.b.", "a.", "", "a-b.c_d", "a.b.c.d"]
        for pattern in patterns {
            let compiled = try CommandPattern(pattern)
            for command in commands {
                #expect(compiled.matches(command) == bySegments(pattern, command), "\(pattern) ~ \(command)")
            }
        }
    }

    @Test(arguments: ["", "canvas.", "*.snap", "canvas.*.x", "canvas snap", "canvas..snap"])
    func badPatternsAreRefusedByName(_ text: String) {
        #expect(throws: CommandPattern.Invalid.self) { try CommandPattern(text) }
        do { _ = try CommandPattern(text) } catch { #expect("\(error)".contains("\"\(text)\"")) }
    }
}

struct AccessPolicyTests {
    let policy = AccessPolicy()
    let allow = AccessRules(allow: ["canvas.*", "camera.snap", "screen.tap"])
    let declared = ["canvas.snapshot", "camera.snap", "screen.tap", "sms.send"]
    let noInput = CapabilityFlags(requiresForeground: true, supportsInputInjection: false)

    @Test func bothAllowlistedAndDeclaredIsNeeded() {
        #expect(policy.decide("canvas.snapshot", rules: allow, declared: declared, flags: noInput, foreground: true) == .allow)
        #expect(policy.decide("sms.send", rules: allow, declared: declared, flags: noInput, foreground: true) == .deny(.notAllowlisted))
        #expect(policy.decide("canvas.hide", rules: allow, declared: declared, flags: noInput, foreground: true) == .deny(.notDeclared))
    }

    @Test func denyRulesWinOverWildcards() {
        let rules = AccessRules(allow: ["canvas.*"], deny: ["canvas.snapshot"])
        // The refusal names the rule (issue 50 §5), under the code callers already know.
        let denied = policy.decide("canvas.snapshot", rules: rules, declared: declared, flags: noInput, foreground: true)
        #expect(denied == .deny(.deniedByRule("canvas.snapshot")))
        #expect(AccessDecision.DenyReason.deniedByRule("canvas.snapshot").code == "NOT_ALLOWLISTED")
        #expect(policy.decide("canvas.hide", rules: rules, declared: ["canvas.hide"], flags: noInput, foreground: true) == .allow)
    }

    @Test func brokenRulesFailClosed() {
        // A hand-edited paired.json with a bad deny pattern must not silently allow anything.
        let rules = AccessRules(allow: ["canvas.*", "Bad Pattern"], deny: ["also bad"])
        #expect(policy.decide("canvas.hide", rules: rules, declared: ["canvas.hide"], flags: noInput, foreground: true) == .deny(.deniedByRule("also bad")))
        #expect(
            policy.decide("canvas.hide", rules: AccessRules(allow: ["Bad"]), declared: ["canvas.hide"], flags: noInput, foreground: true)
                == .deny(.notAllowlisted))
    }

    @Test func backgroundedNodesFailForegroundCommandsFast() {
        #expect(
            policy.decide("camera.snap", rules: allow, declared: declared, flags: noInput, foreground: false)
                == .backgroundUnavailable(retryAfterMs: 5000))
    }

    @Test func aNodeThatCapturesFromTheBackgroundIsNotFailedFast() {
        let background = CapabilityFlags(requiresForeground: false, supportsInputInjection: false)
        #expect(policy.decide("camera.snap", rules: allow, declared: declared, flags: background, foreground: false) == .allow)
        #expect(
            policy.decide("sms.send", rules: allow, declared: declared, flags: background, foreground: false) == .deny(.notAllowlisted),
            "the flag spares a fast-fail, it grants nothing")
    }

    @Test func capabilityFlagsRestrictFurther() {
        #expect(
            policy.decide("screen.tap", rules: allow, declared: declared, flags: noInput, foreground: true)
                == .deny(.capability("the node cannot inject input")))
        #expect(policy.decide("screen.tap", rules: allow, declared: declared, flags: .init(requiresForeground: true, supportsInputInjection: true), foreground: true) == .allow)
    }
}

struct TokenBucketTests {
    let t0 = Moment(seconds: 1_800_000_000)

    @Test func burstThenRefill() {
        var bucket = TokenBucket(capacity: 3, perSecond: 0.5, now: t0)
        for _ in 0..<3 { #expect(bucket.take(now: t0) == .granted) }
        #expect(bucket.take(now: t0) == .limited(retryAfterMs: 2000))
        #expect(bucket.take(now: t0 + 1) == .limited(retryAfterMs: 1000))
        #expect(bucket.take(now: t0 + 2) == .granted)
        #expect(bucket.take(now: t0 + 100) == .granted, "refills up to capacity only")
        #expect(bucket.take(now: t0 + 100) == .granted)
        #expect(bucket.take(now: t0 + 100) == .granted)
        #expect(bucket.take(now: t0 + 100) != .granted)
    }
}

/// Issue 52 §1: the third verb. Deny wins over ask, ask over allow; an asked command meets every
/// other check first, so the operator is never asked about one that could not run.
struct AskRuleTests {
    let policy = AccessPolicy()
    let declared = ["camera.snap", "canvas.hide", "device.echo"]

    @Test func denyWinsOverAskAndAskOverAllow() {
        func decide(_ rules: AccessRules, _ command: String = "camera.snap", foreground: Bool = true) -> AccessDecision {
            policy.decide(command, rules: rules, declared: declared, flags: .init(requiresForeground: true), foreground: foreground)
        }
        #expect(decide(AccessRules(ask: ["camera.*"])) == .ask("camera.*"), "an ask rule alone is enough to be asked")
        #expect(decide(AccessRules(allow: ["camera.snap"], ask: ["camera.*"])) == .ask("camera.*"), "ask wins over allow")
        #expect(decide(AccessRules(deny: ["camera.snap"], ask: ["camera.*"])) == .deny(.deniedByRule("camera.snap")), "deny wins over ask")
        #expect(decide(AccessRules(ask: ["screen.*"]), "screen.record") == .deny(.notDeclared), "never asked about what cannot run")
        #expect(decide(AccessRules(ask: ["canvas.*"]), "canvas.hide", foreground: false) == .backgroundUnavailable(retryAfterMs: 5000))
        #expect(decide(AccessRules(allow: ["device.echo"], ask: ["camera.*"]), "device.echo") == .allow)
        // A rule that does not parse (a hand edit) asks about everything: it fails closed.
        #expect(decide(AccessRules(allow: ["device.echo"], ask: ["bad pattern!"]), "device.echo") == .ask("bad pattern!"))
    }

    @Test func askRulesAreKeptAndWrittenOnlyWhenThere() throws {
        let rules = AccessRules(allow: ["canvas.*"], ask: ["camera.snap"])
        let json = String(decoding: try JSONEncoder().encode(rules), as: UTF8.self)
        #expect(json.contains("\"ask\":[\"camera.snap\"]"))
        #expect(try JSONDecoder().decode(AccessRules.self, from: Data(json.utf8)) == rules)
        #expect(!String(decoding: try JSONEncoder().encode(AccessRules(allow: ["canvas.*"])), as: UTF8.self).contains("ask"), "0.9.0's shape when unused")
    }
}
