import Foundation
import Testing
import TestSupport

/// Issue 64: a browser as a node, in a real browser (Debian's headless chromium through selenium).
/// The steps live in python/browser_node.py; each prints "ok STEP".
@Suite(.enabled(if: BrowserNode.missing == nil, Comment(rawValue: BrowserNode.missing ?? "")))
struct BrowserNodeTests {
    static let screenshots = Repository.url(".build/browser-screenshots")

    /// The part's "ok" lines (`all`: every line it printed).
    func run(_ arguments: [String], all: Bool = false) throws -> [String] {
        let child = try ChildProcess(URL(fileURLWithPath: Python.executable), [Repository.url("Tests/IntegrationTests/python/browser_node.py").path] + arguments)
        var out: [String] = []
        while let line = try child.nextLine(timeout: 300) { out.append(line) }
        #expect(child.wait() == 0, "\(out.joined(separator: "\n"))\n\(child.standardError.suffix(2000))")
        #expect(out.last == "done", "\(out.joined(separator: "\n"))")
        return all ? out : out.filter { $0.hasPrefix("ok ") }
    }

    /// A daemon with the bridge CA and the browser door on a free port: it, the door's page, its state.
    func door() throws -> (bridge: BridgeDaemon, page: String, state: TemporaryDirectory) {
        let state = TemporaryDirectory("bridge")
        let made = try CLI.run(["ca", "init", "--name", "bridge.local", "--state-dir", state.path])
        #expect(made.status == 0, "\(made.stderr)")
        let bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway", "--browser", "--browser-listen", "127.0.0.1:0"])
        let line = try bridge.waitForLog("browser door listening")
        let page = try #require(line.split(separator: " ").first { $0.hasPrefix("browser=") }.map { String($0.dropFirst("browser=".count)) })
        return (bridge, page, state)
    }

    /// The arguments every part against `door()` takes.
    func against(_ door: (bridge: BridgeDaemon, page: String, state: TemporaryDirectory)) -> [String] {
        [
            "--lanbridge", ChildProcess.product("lanbridge").path, "--state-dir", door.state.path, "--door", door.page,
            "--root", door.state.url.appendingPathComponent("ca/root.crt").path, "--shots", Self.screenshots.path,
        ]
    }

    /// The shell's own Noise reproduces pairing/vectors/ in the browser, with WebCrypto's X25519
    /// and with it disabled before the page loads; its ChaCha20-Poly1305 agrees with Python's
    /// `cryptography` on 10,000 random cases and refuses tampered tags.
    @Test func theShellsCryptoReproducesTheVectorsInChromium() throws {
        let steps = try run([
            "crypto", "--shell", Repository.url("browser/shell").path, "--vectors", Repository.url("pairing/vectors").path,
            "--checks", Repository.url("Tests/IntegrationTests/browser/crypto_checks.js").path, "--cases", "10000",
        ])
        #expect(steps.count == 6, "\(steps)")
    }

    /// The door's hygiene (Host, Origin, CSP, plain HTTP's install page), the page's three codes at
    /// most, then a browser pairs by code against a real daemon, refuses a leaf for another name
    /// from the bridge's intermediate, and reconnects after a reload as the same node.
    @Test func aBrowserPairsByCodeThroughTheBridgeCA() throws {
        let door = try door()
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let steps = try run(["pair"] + against(door))
        #expect(steps.count == 10, "\(steps)")
        #expect(door.bridge.log.contains("pairing request") || door.bridge.log.contains("node connected"), "\(door.bridge.log)")
        for shot in ["browser-code", "browser-connected"] {
            #expect(FileManager.default.fileExists(atPath: Self.screenshots.appendingPathComponent("\(shot).png").path), "no screenshot \(shot)")
        }
    }

    /// `invite --browser`: a link whose `fp` names another bridge is refused before any redeem;
    /// the right one pairs at once and leaves no `#` in the address; a second use fails; the
    /// secret reaches no log.
    @Test func aBrowserPairsByInviteLinkOnceAndOnlyWithItsBridge() throws {
        let door = try door()
        let out = try run(["invite"] + against(door), all: true)
        #expect(out.filter { $0.hasPrefix("ok ") }.count == 3, "\(out)")
        let secret = try #require(out.first { $0.hasPrefix("info secret ") }.map { String($0.dropFirst("info secret ".count)) })
        #expect(secret.count == 32 && !door.bridge.log.contains(secret), "the invite's secret is in the log")
        #expect(door.bridge.log.contains("node paired by invite"), "\(door.bridge.log)")
    }

    /// What the page lends, each only once allowed: camera.snap (Chromium's fake camera; never
    /// getUserMedia without the grant), location.get (CDP's position; denied: a typed error at
    /// once), system.notify (the Service Worker's notifications). Frozen or hidden, it says so and
    /// goes, so invokes fail fast; back, a held invoke runs within 2 s, and no connection is left over.
    @Test func aBrowserLendsItsCapabilitiesAndGoesWhenHidden() throws {
        let door = try door()
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let steps = try run(["capabilities"] + against(door))
        #expect(steps.count == 9, "\(steps)")
        #expect(door.bridge.log.contains("node moved to the background"), "\(door.bridge.log)")
    }

    /// The agent's canvas in a sandboxed frame on the relay's origin, reached by the door's name
    /// (the relay answers that name with the door's certificate): shown, navigated, hidden; a page in
    /// it cannot read the shell or its storage, gets no camera, cannot navigate the top; eval and
    /// snapshot are not offered.
    @Test func theCanvasShowsInASandboxedFrame() throws {
        let state = TemporaryDirectory("bridge")
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let steps = try run(["canvas", "--lanbridge", ChildProcess.product("lanbridge").path, "--state-dir", state.path, "--shots", Self.screenshots.path])
        #expect(steps.count == 3, "\(steps)")
    }

    /// Tier 2: the admin's own certificate is served, answers to its own name, a renewed pair
    /// takes effect without a restart, and a certificate beside a key not its own is refused.
    @Test func theAdminsOwnCertificateIsServedAndReloaded() throws {
        let state = TemporaryDirectory("bridge")
        let steps = try run(["own-certificate", "--lanbridge", ChildProcess.product("lanbridge").path, "--state-dir", state.path])
        #expect(steps.count == 3, "\(steps)")
    }

    /// Tier 3: a self-signed page. Invites are refused (by the CLI and by the bridge), the pairing
    /// is labelled browser-unverified everywhere, and more than display needs `--unverified-page`.
    @Test func aSelfSignedPageIsLabelledAndLimited() throws {
        let state = TemporaryDirectory("bridge")
        let steps = try run(["unverified", "--lanbridge", ChildProcess.product("lanbridge").path, "--state-dir", state.path])
        #expect(steps.count == 6, "\(steps)")
    }

    /// Without the CA the door cannot start, and says what to do.
    @Test func theDoorNeedsTheCA() throws {
        let state = TemporaryDirectory("bridge")
        let run = try CLI.run(["serve", "--state-dir", state.path, "--listen", "loopback", "--no-mdns", "--no-gateway", "--no-ui", "--browser", "--browser-listen", "127.0.0.1:0"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("lanbridge ca init"), "\(run.stderr)")
    }
}

enum BrowserNode {
    static let missing: String? = {
        if !Python.hasModule("selenium") || !Python.hasModule("cryptography") { return "needs Python's selenium and cryptography (scripts/setup installs them)" }
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/certutil"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "needs \(tool) (Debian's chromium, chromium-driver and libnss3-tools; scripts/setup installs them)"
        }
        return nil
    }()
}
