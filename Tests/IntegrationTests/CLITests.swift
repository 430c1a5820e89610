import Foundation
import LanbridgeFiles
import LanbridgeState
import LanbridgeProtocol
import LanbridgeStores
import Testing
import TestSupport

/// The real `lanbridge` binary, run as a subprocess the way an operator runs it.
struct CLITests {
    func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try CLI.run(arguments)
    }

    @Test func identityIsCreatedOnceAndNeverPrintsTheSecret() throws {
        let dir = TemporaryDirectory()
        let first = try run(["identity", "--state-dir", dir.path, "--json"])
        let second = try run(["identity", "--state-dir", dir.path, "--json"])
        #expect(first.status == 0 && second.status == 0)
        struct Report: Decodable { let fingerprint: String; let created: Bool }
        let a = try JSONDecoder().decode(Report.self, from: Data(first.stdout.utf8))
        let b = try JSONDecoder().decode(Report.self, from: Data(second.stdout.utf8))
        #expect(a.created && !b.created && a.fingerprint == b.fingerprint)

        let key = try #require(try IdentityStore(directory: StateDirectory(url: dir.url)).load())
        let secret = key.privateKey.withUnsafeBytes { Data($0) }
        for text in [first.stdout, first.stderr, second.stdout, try run(["identity", "--state-dir", dir.path]).stdout] {
            #expect(!text.contains(secret.base64EncodedString()))
            #expect(!text.contains(Hex.encode(secret)))
        }
    }

    @Test func aCorruptOrExposedKeyGivesAClearErrorAndExitCode() throws {
        let dir = TemporaryDirectory()
        let keyFile = dir.file("identity.key")
        try Data("not a key".utf8).write(to: keyFile)
        chmod(keyFile.path, 0o600)
        let corrupt = try run(["identity", "--state-dir", dir.path])
        #expect(corrupt.status == 65)
        #expect(corrupt.stderr.contains("\(keyFile.path) is corrupt: expected 36 bytes, found 9"))
        #expect(try Data(contentsOf: keyFile) == Data("not a key".utf8), "left untouched")

        try FileManager.default.removeItem(at: keyFile)
        _ = try run(["identity", "--state-dir", dir.path])
        chmod(keyFile.path, 0o640)
        let exposed = try run(["identity", "--state-dir", dir.path])
        #expect(exposed.status == 65)
        #expect(exposed.stderr.contains("chmod 600"))
    }

    @Test func helpTeaches() throws {
        let help = try run(["--help"])
        #expect(help.status == 0)
        for topic in ["identity.key", "paired.json", "LANBRIDGE_STATE_DIR", "Exit codes"] {
            #expect(help.stdout.contains(topic))
        }
        #expect(try run(["no-such-command"]).status == 64)
    }

    /// A state directory with one paired node, written the way the daemon and the CLI do.
    func pairedState() throws -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        let node = try PairingStore(directory: StateDirectory(url: dir.url)).update { state in
            let request = try state.challenge(
                key: PublicKey(bytes: Array(repeating: 7, count: 32))!,
                details: NodeDetails(
                    displayName: "Tablet", platform: "linux", commands: ["system.info", "device.echo"]), source: nil, now: Date())
            state.setCode("123456", requestId: request.requestId)
            return try state.approve(requestId: request.requestId, code: "123456", access: AccessRules(allow: ["system.info"]), now: Date())
        }
        return (dir, node.nodeId.description)
    }

    @Test func allowingEverythingMustBeSaidAndRulesCanBeRemoved() throws {
        let (dir, id) = try pairedState()
        let paired = dir.file("paired.json")
        let before = try Data(contentsOf: paired)
        let star = try run(["nodes", "allow", "Tablet", "*", "--state-dir", dir.path])
        #expect(star.status == 64 && star.stderr.contains("--allow-everything"))
        #expect(try Data(contentsOf: paired) == before, "a refused command changes nothing")
        #expect(try run(["nodes", "allow", "Tablet", "*", "--allow-everything", "--state-dir", dir.path]).status == 0)
        let removed = try run(["nodes", "allow", id, "*", "--remove", "--state-dir", dir.path])
        #expect(removed.status == 0 && removed.stdout.contains("Removed the allow rule *"))
        #expect(try run(["nodes", "deny", "Tablet", "system.info", "--state-dir", dir.path]).status == 0)
        #expect(try run(["nodes", "deny", "Tablet", "system.info", "--remove", "--state-dir", dir.path]).status == 0)
        let missing = try run(["nodes", "deny", "Tablet", "system.info", "--remove", "--state-dir", dir.path])
        #expect(missing.status == 1 && missing.stderr.contains("no deny rule"))
        let rules = try PairingStore(directory: StateDirectory(url: dir.url)).read().paired.nodes.first?.access
        #expect(rules == AccessRules(allow: [], deny: []))
    }

    /// Issue 51 §1: state a newer lanbridge wrote stops the daemon and the CLI, naming both
    /// versions, and nothing rewrites it (a downgrade fails closed).
    @Test func aNewerStoreFormatIsRefusedAndLeftAlone() throws {
        let (dir, _) = try pairedState()
        let paired = dir.file("paired.json")
        let newer = try String(contentsOf: paired, encoding: .utf8).replacingOccurrences(of: "\"version\" : 1", with: "\"version\" : 9")
        try Data(newer.utf8).write(to: paired)
        let serve = try run(["serve", "--state-dir", dir.path, "--no-mdns", "--no-gateway", "--no-ui", "--bind", "loopback", "--port", "0"])
        #expect(serve.status != 0 && serve.stderr.contains("format 9, written by a newer lanbridge"), "\(serve)")
        let allow = try run(["nodes", "allow", "Tablet", "device.echo", "--state-dir", dir.path])
        #expect(allow.status != 0 && allow.stderr.contains("format 9"), "\(allow)")
        #expect(try String(contentsOf: paired, encoding: .utf8) == newer, "nothing rewrote it")
    }

    /// Issue 50 §3: `config show` prints each value in effect and where it came from; a wrong
    /// file is refused (78) with the man page that describes every key.
    @Test func configShowSaysWhereEachValueComesFrom() throws {
        let dir = TemporaryDirectory()
        try Data(#"{"limits": {"maxResultBytes": 1048576}, "gateway": {"url": "ws://127.0.0.1:9999"}}"#.utf8).write(to: dir.file("config.json"))
        let shown = try run(["config", "show", "--json", "--state-dir", dir.path])
        #expect(shown.status == 0, "\(shown)")
        let rows = try JSONDecoder().decode([JSONValue].self, from: Data(shown.stdout.utf8))
        func row(_ key: String) -> JSONValue? { rows.first { $0["key"] == .string(key) } }
        #expect(row("limits.maxResultBytes")?["value"] == 1_048_576 && row("limits.maxResultBytes")?["source"] == "file")
        #expect(row("gateway.url")?["value"] == "ws://127.0.0.1:9999" && row("gateway.url")?["source"] == "file")
        #expect(row("limits.defaultTimeoutMs")?["value"] == 30000 && row("limits.defaultTimeoutMs")?["source"] == "default")
        #expect(rows.count > Limit.allCases.count, "every limit, and the other keys")
        try Data(#"{"limits": {"maxResultByte": 1}}"#.utf8).write(to: dir.file("config.json"))
        let wrong = try run(["config", "show", "--state-dir", dir.path])
        #expect(wrong.status == 78 && wrong.stderr.contains("limits.maxResultByte") && wrong.stderr.contains("lanbridge-config(5)"), "\(wrong)")
    }

    /// Issue 50 §5: approving a KEY CHANGED request needs --replace or --add; without either (and no
    /// terminal to ask at) nothing changes, and --replace leaves one device of that name.
    @Test func approvingAKeyChangeAsksReplaceOrAdd() throws {
        let (dir, id) = try pairedState()
        let request = try PairingStore(directory: StateDirectory(url: dir.url)).update { state in
            let r = try state.challenge(
                key: PublicKey(bytes: Array(repeating: 8, count: 32))!,
                details: NodeDetails(displayName: "Tablet", platform: "linux", commands: ["system.info"]), source: nil, now: Date())
            state.setCode("654321", requestId: r.requestId)
            return r.requestId
        }
        let table = try run(["nodes", "pending", "--state-dir", dir.path]).stdout
        #expect(table.contains("KEY CHANGED"), "\(table)")
        let undecided = try run(["nodes", "approve", request, "--code", "654321", "--state-dir", dir.path])
        #expect(undecided.status != 0 && undecided.stderr.contains("--replace") && undecided.stderr.contains("--add"), "\(undecided)")
        #expect(try PairingStore(directory: StateDirectory(url: dir.url)).read().request(request) != nil, "still pending")
        let replaced = try run(["nodes", "approve", request, "--code", "654321", "--replace", "--state-dir", dir.path])
        #expect(replaced.status == 0 && replaced.stdout.contains("It replaces \(id)"), "\(replaced)")
        let nodes = try PairingStore(directory: StateDirectory(url: dir.url)).read().paired.nodes
        #expect(nodes.count == 1 && nodes.first?.nodeId.description != id && nodes.first?.access.allow == ["system.info"])
    }

    /// Issue 50 §5: `allow` says when it lifted a deny rule, and when a broader one still wins.
    @Test func allowSaysWhatItDidToTheDenyRules() throws {
        let (dir, _) = try pairedState()
        #expect(try run(["nodes", "deny", "Tablet", "device.echo", "--state-dir", dir.path]).status == 0)
        let lifted = try run(["nodes", "allow", "Tablet", "device.echo", "--state-dir", dir.path])
        #expect(lifted.status == 0 && lifted.stdout.contains("This removed the deny rule device.echo."), "\(lifted)")
        #expect(try run(["nodes", "deny", "Tablet", "device.*", "--state-dir", dir.path]).status == 0)
        let shadowed = try run(["nodes", "allow", "Tablet", "device.echo", "--state-dir", dir.path])
        #expect(shadowed.status == 0 && !shadowed.stdout.contains("This removed"), "\(shadowed)")
        #expect(shadowed.stderr.contains("the deny rule device.* still matches device.echo, and deny rules win"), "\(shadowed)")
    }

    @Test func serveRefusesAStateDirectoryOthersCanWriteAndWarnsOnOneTheyCanRead() throws {
        let dir = TemporaryDirectory()
        chmod(dir.path, 0o777)
        let writable = try run(["serve", "--state-dir", dir.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0"])
        #expect(writable.status == 78 && writable.stderr.contains("other users could replace the pairing files"), "\(writable.stderr)")
        chmod(dir.path, 0o755)
        let readable = try launch(
            "lanbridge", ["serve", "--state-dir", dir.path, "--no-mdns", "--no-gateway", "--bind", "loopback", "--port", "0"],
            mergeStandardError: true)
        _ = try readable.waitForLine { $0.contains("lets other users in") }
        _ = try readable.waitForLine { $0.contains("lanbridge listening") }  // a warning: it serves
        readable.signal(SIGTERM)
        #expect(readable.wait() == 0)
    }
}
