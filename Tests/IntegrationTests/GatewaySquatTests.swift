import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// A local user who binds the gateway's address while the gateway is down must learn nothing: no
/// token, no node data, not even the upgrade request. Squatters are socat processes that record
/// every byte they receive.
@Suite(.serialized)
struct GatewaySquatTests {
    static let squatter = "lbsquat"
    static let canSwitchUser =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd")

    /// A free loopback port, for a squatter and then the gateway to take in turn.
    func freePort() throws -> Int { try Python.freePort() }

    /// A squatter on 127.0.0.1:`port`, as `user` (nil: this user): one process, no children, the
    /// system's Python (another user cannot run ours). It prints "listening", then for every
    /// connection "heard HEX" with every byte it received; with `answerUpgrade`, it answers the
    /// upgrade request with a correct 101 that carries no token proof, as a careless impostor would.
    func squat(port: Int, user: String?, answerUpgrade: Bool = false) throws -> ChildProcess {
        let script = """
            import base64, hashlib, re, socket, sys
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(('127.0.0.1', \(port))); s.listen(16); print('listening', flush=True)
            while True:
                c, _ = s.accept(); c.settimeout(30); heard = b''
                try:
                    while True:
                        chunk = c.recv(65536)
                        if not chunk: break
                        heard += chunk
                        key = re.search(rb'Sec-WebSocket-Key: *([^\\r]+)', heard)
                        if len(sys.argv) > 1 and key and heard.endswith(b'\\r\\n\\r\\n'):
                            accept = base64.b64encode(hashlib.sha1(key.group(1) + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
                            c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + b'\\r\\n\\r\\n')
                except OSError:
                    pass
                c.close(); print('heard', heard.hex(), flush=True)
            """
        let python = ["/usr/bin/python3", "-c", script] + (answerUpgrade ? ["answer"] : [])
        let command = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups", "--"] + python } ?? python
        let child = try ChildProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
        #expect(try child.nextLine() == "listening")
        return child
    }

    /// The bytes the squatter heard on its next connection.
    func heard(_ squatter: ChildProcess) throws -> String {
        let line = try squatter.waitForLine { $0.hasPrefix("heard") }
        return String(decoding: (try? Hex.decode(String(line.dropFirst("heard ".count)))) ?? [], as: UTF8.self)
    }

    /// Makes the unprivileged user for the test; removes it afterwards if it was made here.
    func withSquatterUser(_ body: () throws -> Void) throws {
        let existed = ChildProcess.exitStatus("/usr/bin/id", [Self.squatter]) == 0
        if !existed {
            #expect(ChildProcess.exitStatus("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", Self.squatter]) == 0)
        }
        defer { if !existed { _ = ChildProcess.exitStatus("/usr/sbin/userdel", [Self.squatter]) } }
        try body()
    }

    @Test(.enabled(if: canSwitchUser, "needs root, setpriv and useradd to run a squatter as another user"))
    func anotherUserOnTheGatewayPortHearsNothingAndTheGatewayThenConnects() throws {
        try withSquatterUser {
            let port = try freePort()
            let squatter = try squat(port: port, user: Self.squatter)
            defer { squatter.killIfRunning() }
            let tokens = TemporaryDirectory("token")
            let tokenFile = writeTokenFile("squat-test-token", in: tokens)
            let bridge = try BridgeDaemon(arguments: ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", tokenFile])
            defer { bridge.stop() }
            let refusal = try bridge.waitForLog("gateway link down")
            #expect(refusal.contains("belongs to \(Self.squatter)") && refusal.contains("squatting"), "\(refusal)")
            #expect(try heard(squatter) == "", "the squatter heard something")
            squatter.killIfRunning()
            // The real gateway (root) takes the port back; the bridge links up on its own.
            let gateway = try SimulatedGateway(port: port, tokenFile: tokenFile)
            defer { gateway.stop() }
            try gateway.waitFor("bridge connected")
        }
    }

    /// A listener run by an allowed owner that does not know the token gets a random challenge and
    /// nothing else: the token never crosses the link.
    @Test func aListenerThatDoesNotKnowTheTokenLearnsOnlyAChallenge() throws {
        let port = try freePort()
        let squatter = try squat(port: port, user: nil, answerUpgrade: true)
        defer { squatter.killIfRunning() }
        let tokens = TemporaryDirectory("token")
        let bridge = try BridgeDaemon(arguments: ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", writeTokenFile("squat-test-token", in: tokens)])
        defer { bridge.stop() }
        let heardText = try heard(squatter)
        #expect(try bridge.waitForLog("gateway link down").contains("did not answer the token challenge"))
        #expect(heardText.contains("Lanbridge-Challenge"), "it did hear the upgrade request: \(heardText)")
        #expect(!heardText.contains("squat-test-token") && !heardText.contains("Authorization"))
        #expect(!heardText.contains("bridge.hello") && !heardText.contains("node"), "no frame, no node data")
    }

    /// Bug (issue 11): a listener that accepts and never answers the upgrade wedged the link for
    /// good. The upgrade has a deadline; the link goes down, says why, and redials.
    @Test func aListenerThatNeverAnswersTheUpgradeDoesNotWedgeTheLink() throws {
        let port = try freePort()
        let silent = try squat(port: port, user: nil)
        defer { silent.killIfRunning() }
        let tokens = TemporaryDirectory("token")
        let bridge = try BridgeDaemon(arguments: ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", writeTokenFile("silent-token", in: tokens)])
        defer { bridge.stop() }
        #expect(try bridge.waitForLog("gateway link down").contains("no answer to the upgrade within"))
    }

    /// The recommended setup: the gateway on a Unix socket, its owner checked with SO_PEERCRED.
    @Test func aUnixSocketGatewayLinksUpAndAnotherOwnersSocketIsRefused() throws {
        let directory = TemporaryDirectory("gw")
        let socket = directory.file("gateway.sock").path
        let tokens = TemporaryDirectory("token")
        let tokenFile = writeTokenFile("unix-test-token", in: tokens)
        let gateway = try SimulatedGateway(tokenFile: tokenFile, arguments: ["--unix", socket])
        defer { gateway.stop() }
        let bridge = try BridgeDaemon(arguments: ["--gateway", "unix:\(socket)", "--gateway-token-file", tokenFile])
        defer { bridge.stop() }
        try gateway.waitFor("bridge connected")
        // Only the named owner may serve it: naming another user makes the same socket refused.
        let picky = try BridgeDaemon(arguments: ["--gateway", "unix:\(socket)", "--gateway-token-file", tokenFile, "--gateway-owner", "65534"])
        defer { picky.stop() }
        let refusal = try picky.waitForLog("gateway link down")
        #expect(refusal.contains("uid 65534") && refusal.contains("squatting"), "\(refusal)")
    }
}
