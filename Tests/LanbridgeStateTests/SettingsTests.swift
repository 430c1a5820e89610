import Foundation
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

struct BridgeSettingsTests {
    func parse(_ text: String) throws -> BridgeSettings { try BridgeSettings.parse(Data(text.utf8), file: "config.json") }

    func error(_ text: String) -> String {
        do { _ = try parse(text); return "accepted" } catch { return "\(error)" }
    }

    @Test func defaultsCanBeAddedToAndCarvedOut() throws {
        let settings = try parse(#"{"access": {"defaults": {"ios": {"add": ["system.info"], "remove": ["camera.list", "canvas.eval"]}}}}"#)
        let rules = settings.defaultRules(forPlatform: "ios")
        #expect(rules.allow.contains("system.info") && !rules.allow.contains("camera.list"))
        #expect(rules.deny == ["canvas.eval"], "removing one command from canvas.* becomes a deny rule")
        #expect(settings.defaultRules(forPlatform: "android").allow == AccessRules.everydayCanvas + ["camera.list"], "issue 26: no sms.send by default")
    }

    @Test(arguments: [
        (#"{"acess": {}}"#, "acess: unknown key"),
        (#"{"access": {"defaults": {"ios": {"add": ["canvas.*", "camera.snpa"]}}}}"#, "access.defaults.ios.add[1]: \"camera.snpa\" matches no known command"),
        (#"{"access": {"defaults": {"ios": {"add": ["Canvas .*"]}}}}"#, "access.defaults.ios.add[0]: bad command pattern"),
        (#"{"canvas": {"upstream": "http://192.168.1.5:80"}}"#, "canvas.upstream: expected a loopback"),
        (#"{"canvas": {"allowOrigins": ["https://example.com/path"]}}"#, "canvas.allowOrigins[0]: an origin has no path"),
        (#"{"canvas": {"listen": "nowhere"}}"#, "canvas.listen: expected PORT"),
        (#"{"access": {"defaults": {"windows": {}}}}"#, "access.defaults.windows: unknown key"),
        (#"{"access": {"foreground": ["screen.*", "scren.*"]}}"#, "access.foreground[1]"),
        (#"{"limits": {"maxResultBytes": "8MB"}}"#, "limits.maxResultBytes: expected a whole number"),
        (#"{"limits": {"maxConcurrentInvokes": 0}}"#, "limits.maxConcurrentInvokes: expected a whole number in 1...1024"),
        (#"{"commands": {"extra": ["custom.*"]}}"#, "commands.extra[0]"),
        ("[1,", "not valid JSON"),
        (#"{"gateway": {"protocol": "mqtt"}}"#, "gateway.protocol: expected \"lanbridge\" or \"openclaw\""),
        (#"{"wake": {"exec": "wake-phone"}}"#, "wake.exec: expected an absolute path"),
        (#"{"wake": {"exec": "/usr/bin/true", "timeoutMs": 10}}"#, "wake.timeoutMs: expected a whole number in 100...120000"),
        (#"{"wake": {"exec": "/usr/bin/true", "args": "--topic x"}}"#, "wake.args: expected a list of strings"),
        (#"{"wake": {"command": "/usr/bin/true"}}"#, "wake.command: unknown key"),
        (#"{"wake": {"exec": "/usr/bin/true", "consoleUid": 0}}"#, "wake.consoleUid: unknown key"),
        (#"{"notify": {"exec": "notify-send"}}"#, "notify.exec: expected an absolute path"),
        (#"{"notify": {"exec": "/usr/bin/true", "timeoutMs": 200000}}"#, "notify.timeoutMs: expected a whole number in 100...120000"),
        (#"{"notify": {"exec": "/usr/bin/true", "consoleUid": -1}}"#, "notify.consoleUid: expected a whole number"),
        (#"{"notify": {"exec": "/usr/bin/true", "consoleUid": "1000"}}"#, "notify.consoleUid: expected a whole number"),
    ])
    func everyBadEntryIsNamed(_ config: String, _ expected: String) {
        #expect(error(config).contains(expected), "\(error(config))")
    }

    /// Issue 52 §1, §2: per platform, ask rules and what a new pairing does with the sensitive
    /// commands it declares (grant, ask each time, or withhold: the default).
    @Test func perPlatformAskRulesAndTheSensitiveChoice() throws {
        let settings = try parse(
            #"{"access": {"defaults": {"*": {"ask": ["device.echo"]}, "android": {"sensitive": "ask"}, "macos": {"sensitive": "grant"}}}}"#)
        let declared = ["camera.snap", "location.get", "canvas.hide", "device.echo"]
        let android = settings.defaultRules(forPlatform: "android", declared: declared)
        #expect(android.ask == ["device.echo", "camera.snap", "location.get"] && !android.allow.contains("camera.snap"))
        let macos = settings.defaultRules(forPlatform: "macos", declared: declared)
        #expect(macos.allow.contains("camera.snap") && macos.confirmed.contains("camera.snap") && macos.ask == ["device.echo"])
        let ios = settings.defaultRules(forPlatform: "ios", declared: declared)
        #expect(ios.ask == ["device.echo"] && !ios.allow.contains("camera.snap"), "withheld: the default")
        #expect(error(#"{"access": {"defaults": {"ios": {"sensitive": "always"}}}}"#).contains(#"access.defaults.ios.sensitive: expected "grant", "ask" or "withhold""#))
        #expect(error(#"{"access": {"defaults": {"ios": {"ask": ["camera.snpa"]}}}}"#).contains("access.defaults.ios.ask[0]"))
    }

    @Test func theGatewayProtocolIsChosenInTheConfig() throws {
        #expect(try parse("{}").gateway.wire == "lanbridge")
        // The README's "Using lanbridge with OpenClaw" config, as printed.
        let readme = try String(contentsOf: Repository.url("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Using lanbridge with OpenClaw").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(try parse(block).gateway.wire == "openclaw")
        #expect(try parse(#"{"gateway": {"url": "ws://127.0.0.1:18789", "protocol": "openclaw"}}"#).gateway.wire == "openclaw")
    }

    @Test func theWakeHookIsAnExecutableWithArguments() throws {
        #expect(try parse("{}").wake.exec == nil)
        let wake = try parse(#"{"wake": {"exec": "/etc/lanbridge/wake/ntfy", "args": ["https://ntfy.example"], "timeoutMs": 5000}}"#).wake
        #expect(wake.exec == "/etc/lanbridge/wake/ntfy" && wake.args == ["https://ntfy.example"] && wake.timeoutMs == 5000)
    }

    /// Issue 52 §4: the notify hook is read as the wake hook is, with the uid its console link is for.
    @Test func theNotifyHookIsAHookWithTheUidOfItsConsoleLink() throws {
        #expect(try parse("{}").notify == BridgeSettings.Notify())
        let notify = try parse(#"{"notify": {"exec": "/usr/local/bin/ask-me", "args": ["--topic", "x"], "timeoutMs": 3000, "consoleUid": 1000}}"#).notify
        #expect(notify.hook.exec == "/usr/local/bin/ask-me" && notify.hook.args == ["--topic", "x"] && notify.hook.timeoutMs == 3000 && notify.consoleUid == 1000)
    }

    /// PROTOCOL.md §12.8's example, every key in it, is a config the daemon accepts.
    @Test func theProtocolsConfigExampleLoads() throws {
        let text = try String(contentsOf: Repository.url("pairing/PROTOCOL.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "### 12.8 The config file").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let settings = try parse(block)
        #expect(settings.wake.exec == "/usr/local/lib/lanbridge/wake/ntfy" && settings.listen == ["192.168.1.10", "tailscale0"])
        #expect(settings.canvas.upstream == "http://127.0.0.1:8080" && settings.canvas.listen == "18793" && settings.canvas.denyOrigins.count == 1)
    }

    /// The README's canvas and OpenClaw's-apps configs, as printed.
    @Test func theReadmesCanvasAndAppsConfigsLoad() throws {
        let readme = try String(contentsOf: Repository.url("README.md"), encoding: .utf8)
        let apps = try #require(readme.components(separatedBy: "## OpenClaw's apps").dropFirst().first)
        let block = try #require(apps.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(try parse(block).openClawApps.enabled)
        #expect(readme.contains(#"`{"canvas": {"upstream": "http://127.0.0.1:8080"}}`"#))
        #expect(try parse(#"{"canvas": {"upstream": "http://127.0.0.1:8080"}}"#).canvas.upstream == "http://127.0.0.1:8080")
    }

    @Test func customCommandsBecomeKnown() throws {
        let settings = try parse(#"{"commands": {"extra": ["acme.scan"]}, "access": {"defaults": {"*": {"add": ["acme.*"]}}}}"#)
        #expect(settings.defaultRules(forPlatform: "linux").allow.contains("acme.*"))
    }
}

struct AccessEditingTests {
    @Test func denyWinsAndAllowLifts() throws {
        var state = PairingState()
        let request = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: Date())
        let node = try state.approveRevealed(request.requestId, now: Date())
        _ = try state.deny("canvas.snapshot", node: node.details.displayName)
        #expect(state.paired.nodes[0].access.deny == ["canvas.snapshot"])
        _ = try state.allow("canvas.snapshot", node: node.nodeId.description)
        #expect(state.paired.nodes[0].access.deny.isEmpty && state.paired.nodes[0].access.allow.contains("canvas.snapshot"))
        #expect(throws: PairingState.NodeLookupError.self) { try state.allow("canvas.hide", node: "nobody") }
    }
}

/// The example config the Debian package ships (/usr/share/doc/lanbridge/examples/config.json)
/// is one the daemon accepts, and says what the README's install steps rely on.
@Test func thePackagedExampleConfigLoads() throws {
    let settings = try BridgeSettings.load(from: Repository.url("packaging/config.example.json"))
    #expect(settings.gateway.tokenFile == "/etc/lanbridge/gateway.token")
    #expect(settings.metrics.listen.map { ListenAddress.format(host: $0.host, port: $0.port) } == "127.0.0.1:18791")
}

/// Issue 21: SIGHUP raised maxResultBytes in the core while the transport's message cap stayed
/// as it was at start, so a result between the two closed the node's session instead of being
/// answered PAYLOAD_TOO_LARGE. A reload now applies every limit but the sizes, and says so.
@Test func aReloadKeepsTheSizeLimitsTheTransportsStartedWith() {
    let running = BridgeSettings().limits
    var new = running
    new[.maxResultBytes] = 32 << 20
    new[.eventsPerMinute] = 7
    let (applied, kept) = running.reloaded(to: new)
    #expect(applied[.maxResultBytes] == running[.maxResultBytes] && applied.sessionMessageBytes == running.sessionMessageBytes)
    #expect(applied[.eventsPerMinute] == 7 && kept == ["maxResultBytes"])
    #expect(running.reloaded(to: running).kept.isEmpty && running.reloaded(to: running).limits == running)
}

/// Issue 22: the daemon says at start when the open-file limit is too low for its configuration.
struct DescriptorBudgetTests {
    @Test func theBudgetCountsEachNodesDescriptorsAndSaysWhatToRaise() throws {
        let lanbridge = DescriptorBudget(paired: 10_000, openClaw: false, unauthenticated: 96)
        #expect(lanbridge.needed == 10_000 + 96 + DescriptorBudget.reserve)
        #expect(lanbridge.shortfall(limit: 65_536) == nil)
        let openClaw = DescriptorBudget(paired: 10_000, openClaw: true, unauthenticated: 96)
        #expect(openClaw.needed == 20_000 + 96 + DescriptorBudget.reserve)
        let message = try #require(openClaw.shortfall(limit: 1024))
        #expect(message.contains("1024") && message.contains("\(openClaw.needed)") && message.contains("LimitNOFILE="))
        // Issue 37: the canvas relay's connections count twice (each has its upstream one).
        let canvas = DescriptorBudget(paired: 10, openClaw: true, unauthenticated: 96, canvas: 256)
        #expect(canvas.needed == 20 + 96 + 512 + DescriptorBudget.reserve)
        #expect(canvas.shortfall(limit: 100)?.contains("limits.canvasConnections") == true)
    }
}
