import Foundation
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// The CLI and the daemon as an admin meets them: bad input is a usage error that changes
/// nothing, one daemon per state directory, errors that say what to do.
@Suite(.serialized)
struct OperatorCLITests {
    /// Every file in the directory and its bytes.
    func snapshot(_ directory: URL) -> [String: Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return Dictionary(
            uniqueKeysWithValues: names.compactMap { name in
                (try? Data(contentsOf: directory.appendingPathComponent(name))).map { (name, $0) }
            })
    }

    /// A state directory with an identity, one paired node, one pending request and an invite.
    func populatedState() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory("state")
        #expect(try CLI.run(["identity", "--state-dir", dir.path]).status == 0)
        try PairingStore(directory: StateDirectory(url: dir.url)).update { state in
            let r = try state.challenge(
                key: PublicKey(bytes: Array(repeating: 1, count: 32))!,
                details: NodeDetails(
                    displayName: "Tablet", platform: "linux", commands: ["system.info"]), source: "10.0.0.2", now: Date())
            state.setCode("123456", requestId: r.requestId)
            _ = try state.approve(requestId: r.requestId, code: "123456", now: Date())
            _ = try state.challenge(
                key: PublicKey(bytes: Array(repeating: 2, count: 32))!,
                details: NodeDetails(
                    displayName: "Phone", platform: "ios"), source: "10.0.0.3", now: Date())
            _ = state.createInvite(name: "x", ttl: 600, now: Date())
        }
        return dir
    }

    @Test func aSecondDaemonOnTheSameStateExits75AndLeavesTheFirstAlone() throws {
        let first = try BridgeDaemon(arguments: ["--no-gateway"])
        let second = try CLI.run(["serve", "--state-dir", first.state.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0"])
        #expect(second.status == 75 && second.stderr.contains("pid \(first.process.pid)"), "\(second.stderr)")
        #expect(RuntimeStatusFile(directory: StateDirectory(url: first.state.url)).read()?.pid == first.process.pid, "runtime.json is still the first's")
        #expect(FileManager.default.fileExists(atPath: first.state.file("control.sock").path))
        #expect(
            try CLI.run(["nodes", "invoke", "--node", "x", "--command", "device.echo", "--state-dir", first.state.path]).status != 69,
            "the first daemon still answers its control socket")
        first.stop()
    }

    @Test func listeningProblemsAreExplainedWithTheirExitCodes() throws {
        let first = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { first.stop() }
        let taken = try CLI.run(["serve", "--state-dir", TemporaryDirectory().path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", String(first.port)])
        #expect(taken.status == 75 && taken.stderr.contains("already in use"), "\(taken.stderr)")
        let unknown = try CLI.run(["serve", "--state-dir", TemporaryDirectory().path, "--no-mdns", "--no-gateway", "--bind", "no-such-host.invalid", "--port", "0"])
        #expect(unknown.status == 78 && unknown.stderr.contains("--bind no-such-host.invalid"), "\(unknown.stderr)")
        #expect(!unknown.stderr.contains("SocketAddressError") && !taken.stderr.contains("errno"))
    }

    @Test func readOnlyCommandsCreateNothing() throws {
        let parent = TemporaryDirectory()
        let typo = parent.file("typo")
        for command in [
            ["nodes", "list"], ["nodes", "pending"], ["nodes", "describe", "x"], ["audit", "verify"], ["audit", "show"],
            ["nodes", "approve", "abcdefgh", "--unverified"], ["nodes", "revoke", "x"],
        ] {
            let run = try CLI.run(command + ["--state-dir", typo.path])
            #expect(run.status == 66 && run.stderr.contains("no lanbridge state"), "\(command): \(run.status) \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: typo.path), "\(command) created the directory")
        }
    }

    @Test func inviteChecksEveryInputBeforeWritingAnything() throws {
        let dir = TemporaryDirectory("state")
        for bad in [
            ["--host", "bad host/x"], ["--ttl", "inf"], ["--ttl", "1e300s"], ["--ttl", "nan"], ["--ttl", "-5m"], ["--port", "70000"],
            ["--port", "0"], ["--allow", "camera.snpa"], ["--allow", "canv*"], ["--allow", "canvas.*,"],
        ] {
            let run = try CLI.run(["invite", "--no-qr", "--state-dir", dir.path] + bad)
            #expect(run.status == 64, "\(bad): \(run.status) \(run.stderr)")
            #expect(snapshot(dir.url).isEmpty, "\(bad) wrote something")
        }
        let ok = try CLI.run(["invite", "--no-qr", "--host", "::1", "--port", "18790", "--ttl", "90s", "--allow", "canvas.*,system.info", "--state-dir", dir.path])
        #expect(ok.status == 0 && ok.stdout.contains("lanbridge://[::1]:18790/invite?"), "\(ok.stdout)")
    }

    /// Issue 50 §5: an invite or setup code that names a loopback address reaches no device but
    /// this machine; the CLI says so (on stderr: --json stays clean), and not for a LAN address.
    @Test func anInviteToALoopbackAddressWarnsThatNoDeviceCanReachIt() throws {
        let dir = TemporaryDirectory("bridge")
        for arguments in [["invite"], ["invite", "--openclaw"]] {
            let local = try CLI.run(arguments + ["--json", "--host", "127.0.0.1", "--port", "18790", "--state-dir", dir.path])
            #expect(local.status == 0 && local.stderr.contains("only this machine can reach"), "\(local)")
            #expect((try? JSONDecoder().decode(JSONValue.self, from: Data(local.stdout.utf8))) != nil, "stdout is the JSON alone")
            let lan = try CLI.run(arguments + ["--json", "--host", "192.0.2.10", "--port", "18790", "--state-dir", dir.path])
            #expect(lan.status == 0 && !lan.stderr.contains("only this machine"), "\(lan)")
        }
    }

    @Test func anIPv6ListenerGivesInvitesWithBrackets() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"], bind: "::1")
        defer { bridge.stop() }
        let invite = try CLI.run(["invite", "--no-qr", "--state-dir", bridge.state.path])
        #expect(invite.stdout.contains("lanbridge://[::1]:\(bridge.port)/invite?"), "\(invite.stdout)")
    }

    @Test func durationsReadTheSameEverywhere() throws {
        let dir = try populatedState()
        // Parsed (then refused for want of a daemon: 69), not a usage error.
        for value in ["500ms", "2s", "5m", "1h", "90"] {
            #expect(try CLI.run(["nodes", "invoke", "--node", "Tablet", "--command", "system.info", "--timeout", value, "--state-dir", dir.path]).status == 69)
        }
        #expect(try CLI.run(["nodes", "invoke", "--node", "Tablet", "--command", "system.info", "--timeout", "2 s", "--state-dir", dir.path]).status == 64)
    }

    /// Seeded random argument lists for every subcommand: no crash, only documented exit codes,
    /// and a refused command leaves every state file as it was.
    @Test func randomArgumentsNeverCrashAndARefusalChangesNothing() throws {
        let dir = try populatedState()
        let nodeID = try PairingStore(directory: StateDirectory(url: dir.url)).read().paired.nodes[0].nodeId.description
        let requestID = try PairingStore(directory: StateDirectory(url: dir.url)).read().pending.requests[0].requestId
        let commands: [[String]] = [
            ["nodes", "pending"], ["nodes", "approve"], ["nodes", "reject"], ["nodes", "list"], ["nodes", "describe"],
            ["nodes", "allow"], ["nodes", "deny"], ["nodes", "revoke"], ["nodes", "invoke"], ["invite"], ["identity"],
            ["audit", "show"], ["audit", "verify"], ["doctor"],
        ]
        let words = [
            "Tablet", nodeID, requestID, requestID.uppercased(), "canvas.*", "*", "system.info", "--json", "--code", "123456", "abc",
            "--ttl", "inf", "nan", "1e300s", "-1", "0", "99999", "", "\u{1}\u{1B}[2J", String(repeating: "x", count: 100_000), "::1",
            "bad host/x", "--allow", "--host", "--port", "--timeout", "--block", "--from", "10.0.0.3", "--unverified", "--remove",
            "--allow-everything", "--name", "--params", "{}", "[", "--command", "--node", "--no-qr", "é\u{200D}", "--help",
        ]
        var rng = SplitMix(state: 42)
        let documented: Set<Int32> = [0, 1, 64, 65, 66, 69, 74, 75, 78]
        for round in 0..<250 {
            let command = commands[Int(rng.next() % UInt64(commands.count))]
            let arguments = (0..<Int(rng.next() % 5)).map { _ in words[Int(rng.next() % UInt64(words.count))] }
            let before = snapshot(dir.url)
            // The state directory comes from the environment, so no random word can move it.
            let child = try ChildProcess(
                ChildProcess.product("lanbridge"), command + arguments + (command == ["invite"] ? ["--no-qr"] : []),
                environment: ["LANBRIDGE_STATE_DIR": dir.path, "PATH": "/usr/bin:/bin"])
            while try child.nextLine() != nil {}
            let status = child.wait()
            #expect(child.process.terminationReason == .exit, "round \(round): \(command + arguments) died of a signal")
            #expect(documented.contains(status), "round \(round): \(command + arguments) exited \(status): \(child.standardError.prefix(300))")
            if status != 0 {
                #expect(snapshot(dir.url) == before, "round \(round): refused \(command + arguments) changed the state")
            }
        }
    }

    /// The QR code's quiet zone is the four modules the standard asks for, on every side.
    @Test func theQRCodeHasAFourModuleQuietZone() throws {
        let dir = TemporaryDirectory("state")
        let out = try CLI.run(["invite", "--host", "192.168.1.10", "--port", "18790", "--state-dir", dir.path]).stdout
        let qr = out.split(separator: "\n").prefix { !$0.hasPrefix("lanbridge://") }.map(String.init)
        #expect(qr.count > 10)
        // Two modules per text line: the first two lines and the last two are all quiet (light),
        // and every line starts and ends with four light columns.
        for line in qr.prefix(2) + qr.suffix(2) { #expect(line.allSatisfy { $0 == "█" }, "\(line)") }
        for line in qr { #expect(line.prefix(4).allSatisfy { $0 == "█" } && line.suffix(4).allSatisfy { $0 == "█" }) }
    }

    /// Under journald (JOURNAL_STREAM naming stderr) each line carries its syslog priority.
    @Test func underJournaldEachLineCarriesItsPriority() throws {
        let dir = TemporaryDirectory("state")
        let script =
            "export JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); exec \(ChildProcess.product("lanbridge").path) serve --state-dir \(dir.path) --no-mdns --no-gateway --bind loopback --port 0"
        let daemon = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script], mergeStandardError: true)
        defer { daemon.killIfRunning() }
        let line = try daemon.waitForLine { $0.contains("lanbridge listening") }
        #expect(line.hasPrefix("<6>level=info") && !line.contains("ts="), "\(line)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// The CLI run as root (sudo) on the state of a daemon that runs as its own user keeps every
    /// file it writes that user's, so the daemon can still read them.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"), "needs root and useradd"))
    func rootWritesFilesTheDaemonsUserOwns() throws {
        let user = "lbowner"
        let existed = ChildProcess.exitStatus("/usr/bin/id", [user]) == 0
        if !existed { #expect(ChildProcess.exitStatus("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user]) == 0) }
        defer { if !existed { _ = ChildProcess.exitStatus("/usr/sbin/userdel", [user]) } }
        let dir = TemporaryDirectory("state")
        #expect(ChildProcess.exitStatus("/bin/chown", ["\(user):\(user)", dir.path]) == 0)
        #expect(try CLI.run(["invite", "--no-qr", "--host", "127.0.0.1", "--state-dir", dir.path]).status == 0)
        #expect(try CLI.run(["invite", "--no-qr", "--host", "127.0.0.1", "--allow", "canvas.*", "--state-dir", dir.path]).status == 0)
        let owner = try #require(getpwnam(user)).pointee.pw_uid
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir.file(name).path)
            #expect((attributes[.ownerAccountID] as? NSNumber)?.uint32Value == owner, "\(name) is not \(user)'s")
        }
    }

    struct DoctorCheck: Decodable { let name: String; let ok: Bool; let detail: String }

    /// doctor judges the daemon as it runs (no avahi needed with --no-mdns) and checks the store
    /// files `serve` would refuse.
    @Test func doctorJudgesTheDaemonAsConfiguredAndChecksTheStore() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        func doctor() throws -> [DoctorCheck] {
            try JSONDecoder().decode([DoctorCheck].self, from: Data(try CLI.run(["doctor", "--json", "--state-dir", bridge.state.path]).stdout.utf8))
        }
        let healthy = try doctor()
        #expect(healthy.first { $0.name == "avahi-daemon" }?.ok == true, "\(healthy)")
        #expect(healthy.first { $0.name == "store" }?.ok == true)
        bridge.stop()
        try Data("{not json".utf8).write(to: bridge.state.file("paired.json"))
        let broken = try doctor()
        #expect(broken.first { $0.name == "store" }?.ok == false && broken.first { $0.name == "store" }?.detail.contains("paired.json") == true)
        #expect(try CLI.run(["doctor", "--state-dir", bridge.state.path]).status == 1)
    }

    struct Described: Decodable { let nodeId: String; let displayName: String; let connected: Bool }
    struct Status: Decodable {
        struct Nodes: Decodable { let paired, connected, pending, invites: Int }
        let running: Bool
        let nodes: Nodes
        let reachable: [String]
    }

    /// The commands admins reach for, and one node object that means the same everywhere.
    @Test func statusRenameUnblockInvitesAndNamesEverywhere() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { bridge.stop() }
        func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) { try CLI.run(arguments + ["--state-dir", bridge.state.path]) }
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Tablet"])
        let id = try node.pair(with: bridge)
        try bridge.waitForRuntime("the node connected") { $0.nodes[id] != nil }
        let status = try JSONDecoder().decode(Status.self, from: Data(try cli(["status", "--json"]).stdout.utf8))
        #expect(status.running && status.nodes.paired == 1 && status.nodes.connected == 1)
        #expect(!status.reachable.isEmpty, "status --json shows where devices dial, as the README says")
        #expect(try cli(["status"]).stdout.contains("1 connected"))

        let connected = try JSONDecoder().decode([Described].self, from: Data(try cli(["nodes", "list", "--connected", "--json"]).stdout.utf8))
        #expect(connected.map(\.nodeId) == [id] && connected.first?.connected == true)
        let allowed = try JSONDecoder().decode(Described.self, from: Data(try cli(["nodes", "allow", "Tablet", "canvas.*", "--json"]).stdout.utf8))
        #expect(allowed.connected, "allow --json says what describe says")

        #expect(try cli(["nodes", "rename", "Tablet", "Kitchen tablet"]).status == 0)
        #expect(try cli(["nodes", "describe", "Kitchen tablet", "--json"]).stdout.contains(id))

        #expect(try cli(["invite", "--no-qr", "--name", "spare"]).status == 0)
        let invites = try cli(["invite", "list"]).stdout
        let inviteID = try #require(invites.split(separator: "\n").dropFirst().first?.split(separator: " ").first.map(String.init))
        #expect(try cli(["invite", "revoke", inviteID]).status == 0)
        #expect(try cli(["invite", "list"]).stdout.contains("No live invites"))

        let revoked = try cli(["nodes", "revoke", "Kitchen tablet", "--json"])
        #expect(revoked.status == 0 && revoked.stdout.contains(id), "revoke by display name")
        _ = try node.waitFor("fatal")

        let stranger = try SimulatedNode(port: bridge.port, arguments: ["--name", "Stranger"])
        let request = String(try stranger.waitFor("code").split(separator: " ")[2])
        let rejected = try cli(["nodes", "reject", request, "--block", "--json"])
        #expect(rejected.status == 0 && rejected.stdout.contains(request))
        #expect(try cli(["nodes", "unblock", "Stranger"]).status == 0)
        #expect(try bridge.store.read().paired.blocked.isEmpty)
        let events = try AuditLog(directory: StateDirectory(url: bridge.state.url)).entries().map(\.event)
        for event in ["node.renamed", "invite.revoked", "node.revoked", "node.blocked", "node.unblocked"] { #expect(events.contains(event), "\(event)") }
    }

    @Test func completionScriptsAreGenerated() throws {
        for shell in ["bash", "zsh", "fish"] {
            let run = try CLI.run(["--generate-completion-script", shell])
            #expect(run.status == 0 && run.stdout.contains("nodes"), "\(shell)")
        }
        #expect(try CLI.run(["--version"]).stdout == BridgeVersion.current)
    }

    /// `nodes pending --watch` and `audit show --follow` print what happens as it happens; logs
    /// name nodes by name and ID, and peers as ip:port.
    @Test func watchFollowAndLogsThatNameNodes() throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { bridge.stop() }
        let watch = try launch("lanbridge", ["nodes", "pending", "--watch", "--state-dir", bridge.state.path])
        defer { watch.killIfRunning() }
        let follow = try launch("lanbridge", ["audit", "show", "--follow", "--state-dir", bridge.state.path])
        defer { follow.killIfRunning() }
        #expect(try watch.nextLine() == "No pending pairing requests.")
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Watched phone"])
        defer { node.stop() }
        _ = try watch.waitForLine { $0.contains("Watched phone") }
        _ = try follow.waitForLine { $0.contains("pairing.requested") }
        let line = try bridge.waitForLog("pairing requested")
        #expect(line.contains("name=\"Watched phone\"") && line.contains("peer=127.0.0.1:"), "\(line)")
    }
}

/// The version as `scripts/package` reads it: from the one line that states it.
enum BridgeVersion {
    static var current: String {
        let source = (try? String(contentsOf: Repository.url("Sources/LanbridgeBridge/BridgeServer.swift"), encoding: .utf8)) ?? ""
        let line = source.split(separator: "\n").first { $0.contains("public static let version = \"") } ?? ""
        return line.split(separator: "\"").dropFirst().first.map(String.init) ?? "no version line"
    }
}
