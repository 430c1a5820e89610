import Foundation
import Testing
import TestSupport

/// The approval console (issue 24) against a real daemon: a real browser (Debian's chromium and
/// chromedriver, through selenium) with real node-sim processes, and the browser's own attacks
/// over plain HTTP. The steps live in python/console_browser.py; each prints "ok STEP".
@Suite(.enabled(if: ConsoleBrowser.missing == nil, Comment(rawValue: ConsoleBrowser.missing ?? "")))
struct ConsoleEndToEndTests {
    /// Where the pages' screenshots go (pending, node, nodes, invites, audit, status, phone).
    static let screenshots = Repository.url(".build/console-screenshots")

    func run(_ part: String, _ bridge: BridgeDaemon, extra: [String] = []) throws -> [String] {
        let child = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [
                Repository.url("Tests/IntegrationTests/python/console_browser.py").path, part,
                "--lanbridge", ChildProcess.product("lanbridge").path, "--node-sim", ChildProcess.product("lanbridge-node-sim").path,
                "--state-dir", bridge.state.path, "--bridge-port", String(bridge.port), "--console", try #require(bridge.consoleURL),
                "--shots", Self.screenshots.path,
            ] + extra)
        var out: [String] = []
        while let line = try child.nextLine(timeout: 240) { out.append(line) }
        #expect(child.wait() == 0, "\(out.joined(separator: "\n"))\n\(child.standardError.suffix(2000))")
        #expect(out.last == "done", "\(out.joined(separator: "\n"))")
        return out.filter { $0.hasPrefix("ok ") }
    }

    /// Log in by `lanbridge ui`'s link; a request appears live; a wrong code is refused and
    /// counted; the right one approves; a rule edited in the page applies to the next invoke;
    /// Later, Reject, Reject and block; an invite's QR code decodes and pairs; approval with "ask
    /// each time", an asked invoke's prompt live (approve, deny, always); the Activity page, live;
    /// revoke; the audit.
    @Test func anOperatorDoesTheWholeApprovalFlowInTheBrowser() throws {
        let bridge = try BridgeDaemon(console: true)
        let steps = try run("browser", bridge)
        #expect(steps.count == 16, "\(steps)")
        // No secret reaches the log: not a login token, not an invite's URI.
        #expect(!bridge.log.contains("token=") && !bridge.log.contains("lanbridge://"), "\(bridge.log)")
        for page in ["pending", "node", "nodes", "asks", "activity", "invites", "audit", "status", "phone"] {
            #expect(FileManager.default.fileExists(atPath: Self.screenshots.appendingPathComponent("\(page).png").path), "no screenshot of \(page)")
        }
    }

    /// A wrong Host, no cookie, a forged cookie, a replayed link, a cross-origin POST and one
    /// without the CSRF token, the headers, log out; wrong tokens lock nobody out, HEAD does not
    /// redeem, sessions are listed and ended from the CLI, and the link never reaches argv.
    @Test func theBrowsersOwnAttacksAreRefused() throws {
        let bridge = try BridgeDaemon(console: true)
        let steps = try run("attacks", bridge)
        #expect(steps.count == 10, "\(steps)")
        #expect(!bridge.log.contains("token="), "\(bridge.log)")
        // 20 wrong tokens from one uid: one log line (with its count), not twenty.
        #expect(bridge.log.components(separatedBy: "console: refused a login link").count - 1 == 1, "\(bridge.log)")
    }

    /// Issue 36: another local user (`nobody`) took over the console with the operator's link,
    /// read from argv, or with its session cookie, leaked to a server on another loopback port.
    @Test(.enabled(if: getuid() == 0, "runs requests as nobody through setpriv, which needs root"))
    func anotherLocalUserCanUseNeitherTheLinkNorTheSession() throws {
        let bridge = try BridgeDaemon(console: true)
        let steps = try run("other-user", bridge)
        #expect(steps.count == 2, "\(steps)")
        #expect(bridge.log.contains("other_user") && bridge.log.contains("uid=65534"), "the refusals are logged with the uid: \(bridge.log)")
    }

    /// Issue 38: an OpenClaw app's request, approved in the console by the first characters of the
    /// fingerprint the app showed: compared, not copied (the page never shows it).
    @Test func anOpenClawAppIsApprovedByItsFingerprintNotACode() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway", "--openclaw-apps", "--openclaw-apps-listen", "0"], console: true)
        let line = try bridge.waitForLog("OpenClaw apps door listening")
        let door = String(line.split(separator: " ").first { $0.hasPrefix("openclawApps=") }?.dropFirst("openclawApps=".count) ?? "")
        let steps = try run("openclaw-app", bridge, extra: ["--door", door])
        #expect(steps.count == 3, "\(steps)")
    }

    /// `lanbridge ui` says plainly when there is nothing to open.
    @Test func uiExplainsAnOffConsoleAndAStoppedDaemon() throws {
        let off = try BridgeDaemon()  // the harness's daemons run with --no-ui
        let refused = try CLI.run(["ui", "--state-dir", off.state.path])
        #expect(refused.status == 69 && refused.stderr.contains("console is off"), "\(refused)")
        off.stop()
        let stopped = try CLI.run(["ui", "--state-dir", off.state.path])
        #expect(stopped.status == 69 && stopped.stderr.contains("not running"), "\(stopped)")
    }
}

enum ConsoleBrowser {
    static let missing: String? = {
        if !Python.hasModule("selenium") { return "needs Python's selenium (scripts/setup installs it)" }
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/zbarimg"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "needs \(tool) (Debian's chromium, chromium-driver and zbar-tools; scripts/setup installs them)"
        }
        return nil
    }()
}
