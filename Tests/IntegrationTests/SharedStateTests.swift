import Foundation
import LanbridgeFiles
import LanbridgeState
import Testing
import TestSupport

/// The packaged layout: the daemon runs as its own user, with the unit's umask, on a state
/// directory shared (0770) with its group; an admin in that group runs the CLI as themselves;
/// anyone else is refused and told the fix.
@Suite(.serialized)
struct SharedStateTests {
    static let group = "lbtshare", service = "lbtsvc", admin = "lbtadmin", outsider = "lbtother"
    static let usable =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// A copy of the debug `lanbridge` that other users can run wherever the checkout lives (a
    /// clone under /root is closed to them). The Swift runtime it links is the toolchain's, which is.
    /// Made again when a test before removed it.
    static var binary: String {
        let directory = "/tmp/lanbridge-shared-state-\(getpid())"
        let copy = directory + "/lanbridge"
        guard !FileManager.default.isExecutableFile(atPath: copy) else { return copy }
        mkdir(directory, 0o755)
        chmod(directory, 0o755)
        _ = try? FileManager.default.copyItem(atPath: ChildProcess.product("lanbridge").path, toPath: copy)
        return copy
    }

    /// Runs the copied `lanbridge` (in place of the product `launch` names) as `user`, with that
    /// user's groups, under the service's UMask=0077.
    static func launcher(_ user: String) -> [String] {
        [
            "/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user == service ? group : user)", "--init-groups",
            "/bin/sh", "-c", "umask 077; exec \(binary) \"$@\"",
        ]
    }

    /// Accounts made for the test and removed after it (only those it made).
    final class Accounts {
        var made: [String] = []
        var groupMade = false
        init() throws {
            if ChildProcess.exitStatus("/usr/bin/getent", ["group", SharedStateTests.group]) != 0 {
                try #require(ChildProcess.exitStatus("/usr/sbin/groupadd", ["--system", SharedStateTests.group]) == 0)
                groupMade = true
            }
            for (user, options) in [
                (SharedStateTests.service, ["--gid", SharedStateTests.group]),
                (SharedStateTests.admin, ["--user-group", "--groups", SharedStateTests.group]),
                (SharedStateTests.outsider, ["--user-group"]),
            ]
            where ChildProcess.exitStatus("/usr/bin/id", [user]) != 0 {
                try #require(ChildProcess.exitStatus("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin"] + options + [user]) == 0)
                made.append(user)
            }
        }
        deinit {
            for user in made { _ = ChildProcess.exitStatus("/usr/sbin/userdel", [user]) }
            if groupMade { _ = ChildProcess.exitStatus("/usr/sbin/groupdel", [SharedStateTests.group]) }
        }
    }

    /// The test's accounts, and a state directory as the package leaves it: the service's, 0770, shared with its group.
    static func packagedState() throws -> (Accounts, TemporaryDirectory) {
        let accounts = try Accounts()
        let state = TemporaryDirectory("shared")
        #expect(ChildProcess.exitStatus("/bin/chown", ["\(service):\(group)", state.path]) == 0)
        chmod(state.path, 0o770)
        return (accounts, state)
    }

    static func cleanUp(_ accounts: Accounts) {
        withExtendedLifetime(accounts) {}
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: binary).deletingLastPathComponent().path)
    }

    @Test(.enabled(if: usable, "needs root, useradd and setpriv to run the daemon and the CLI as other users"))
    func aGroupMemberRunsTheCLIAsThemselvesAndTheDaemonReadsWhatTheyWrite() throws {
        let (accounts, state) = try Self.packagedState()
        defer { Self.cleanUp(accounts) }
        let bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway"], launcher: Self.launcher(Self.service))
        defer { bridge.stop() }
        func cli(_ user: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try CLI.run(arguments + ["--state-dir", state.path], launcher: Self.launcher(user))
        }

        // The admin cannot read identity.key, yet sees the bridge's fingerprint (identity.pub).
        let asRoot = try CLI.run(["identity", "--json", "--state-dir", state.path])
        let asAdmin = try cli(Self.admin, ["identity", "--json"])
        #expect(asAdmin.status == 0, "\(asAdmin.stderr)")
        #expect(
            asAdmin.stdout.contains("\"fingerprint\"")
                && asAdmin.stdout.split(separator: "\n").filter { $0.contains("fingerprint") }
                    == asRoot.stdout.split(separator: "\n").filter { $0.contains("fingerprint") }
        )

        // The admin approves a node; the daemon (another user, umask 077) reads what the admin wrote.
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Tablet"])
        _ = try node.waitFor("node")
        let code = try node.waitFor("code").split(separator: " ")
        let approval = try cli(Self.admin, ["nodes", "approve", String(code[2]), "--code", String(code[0])])
        #expect(approval.status == 0, "\(approval.stderr)")
        try node.waitFor("connected")
        #expect(try cli(Self.admin, ["nodes", "allow", "Tablet", "device.echo"]).status == 0)
        #expect(try cli(Self.admin, ["invite", "--no-qr", "--host", "127.0.0.1"]).status == 0)
        // …and reaches the running daemon through the control socket.
        let echo = try cli(Self.admin, ["nodes", "invoke", "--node", "Tablet", "--command", "device.echo", "--params", #"{"x":1}"#, "--json"])
        #expect(echo.status == 0, "\(echo.stderr)")

        // Every file is the group's and group-writable, whoever wrote it; the private key is not.
        let gid = try #require(getgrnam(Self.group)).pointee.gr_gid
        for name in try FileManager.default.contentsOfDirectory(atPath: state.path) where !name.hasPrefix(".") {
            var info = stat()
            #expect(lstat(state.file(name).path, &info) == 0)
            if name == IdentityStore.fileName {
                #expect(info.st_mode & 0o777 == 0o600, "identity.key")
            } else {
                #expect(info.st_gid == gid && info.st_mode & 0o777 == 0o660, "\(name): gid \(info.st_gid), mode \(String(info.st_mode & 0o777, radix: 8))")
            }
        }

        // Someone outside the group gets the way in, not a stack of errors.
        let refused = try cli(Self.outsider, ["nodes", "list"])
        #expect(refused.status == 77 && refused.stderr.contains("usermod -aG"), "\(refused.status) \(refused.stderr)")
        let invoke = try cli(Self.outsider, ["nodes", "invoke", "--node", "Tablet", "--command", "device.echo"])
        #expect(invoke.status != 0)
    }

    /// Issue 64: root makes the bridge CA (`sudo lanbridge ca init`) in the packaged state; the
    /// daemon, running as its own user, reads the intermediate and serves the browser door, and a
    /// member of the group sees the root's SHA-256. The intermediate's key stays the owner's alone.
    @Test(.enabled(if: usable, "needs root, useradd and setpriv to run the daemon and the CLI as other users"))
    func theCARootMadeIsTheDaemonsToUse() throws {
        let (accounts, state) = try Self.packagedState()
        defer { Self.cleanUp(accounts) }
        let made = try CLI.run(["ca", "init", "--name", "bridge.local", "--state-dir", state.path])
        #expect(made.status == 0, "\(made.stderr)")
        let service = try #require(getpwnam(Self.service)).pointee.pw_uid
        for (name, mode) in [("ca", 0o750), ("ca/intermediate.pem", 0o600), ("ca/root.crt", 0o644)] {
            var info = stat()
            #expect(lstat(state.file(name).path, &info) == 0)
            #expect(info.st_uid == service && info.st_mode & 0o777 == mode_t(mode), "\(name): uid \(info.st_uid), mode \(String(info.st_mode & 0o777, radix: 8))")
        }
        let bridge = try BridgeDaemon(state: state, arguments: ["--no-gateway", "--browser", "--browser-listen", "127.0.0.1:0"], launcher: Self.launcher(Self.service))
        defer { bridge.stop() }
        _ = try bridge.waitForLog("browser door listening")
        let shown = try CLI.run(["ca", "show", "--state-dir", state.path], launcher: Self.launcher(Self.admin))
        #expect(shown.status == 0 && shown.stdout.contains("Root SHA-256"), "\(shown.stderr)")
    }
}
