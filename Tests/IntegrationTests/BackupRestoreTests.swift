import Foundation
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeStores
import Testing
import TestSupport

/// Issue 51 §4: a lost disk loses nothing. A backup taken while the daemon runs, restored into an
/// empty state directory, is the same bridge: a node paired before reconnects without pairing
/// again. A file that is not a whole backup of this or an older lanbridge writes nothing.
@Suite(.serialized)
struct BackupRestoreTests {
    struct Unexpected: Error { let value: JSONValue; init(_ value: JSONValue) { self.value = value } }

    @Test func aRestoredBridgeIsTheSameBridgeToItsNodes() throws {
        let bridge = try BridgeDaemon()
        let node = try SimulatedNode(port: bridge.port, arguments: ["--name", "Kitchen Pi"])
        let nodeID = try node.pair(with: bridge)
        let backups = TemporaryDirectory("backup")
        let file = backups.file("bridge.tar")
        let backup = try CLI.run(["backup", file.path, "--json", "--state-dir", bridge.state.path])
        #expect(backup.status == 0, "\(backup)")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "a backup holds the private key")
        #expect(try CLI.run(["backup", file.path, "--state-dir", bridge.state.path]).status == 73, "an existing file is never overwritten")
        let port = bridge.port
        bridge.stop()

        // The lost disk: an empty state directory, the same port.
        let disk = TemporaryDirectory("new-disk")
        let restore = try CLI.run(["restore", file.path, "--state-dir", disk.path])
        #expect(restore.status == 0 && restore.stdout.contains("1 paired node"), "\(restore)")
        let again = try BridgeDaemon(state: disk, port: port)
        try node.waitFor("connected")  // no new code, no approval: the pin and the pairing held
        let listed = try JSONDecoder().decode(JSONValue.self, from: Data(try CLI.run(["nodes", "list", "--json", "--state-dir", disk.path]).stdout.utf8))
        guard case let .array(nodes) = listed else { throw Unexpected(listed) }
        #expect(nodes.count == 1 && nodes.first?["nodeId"] == .string(nodeID))
        #expect(try CLI.run(["audit", "verify", "--state-dir", disk.path]).status == 0, "the audit chain survives the move")

        let running = try CLI.run(["restore", file.path, "--replace", "--state-dir", disk.path])
        #expect(running.status == 75 && running.stderr.contains("stop it first"), "\(running)")
        again.stop()
        let holds = try CLI.run(["restore", file.path, "--state-dir", disk.path])
        #expect(holds.status == 73 && holds.stderr.contains("--replace"), "\(holds)")
        #expect(try CLI.run(["restore", file.path, "--replace", "--state-dir", disk.path]).status == 0)
    }

    /// Each bad file is refused with a reason, and nothing is written: not even the directory.
    @Test func whatIsNotAWholeBackupWritesNothing() throws {
        let source = TemporaryDirectory("bridge")
        #expect(try CLI.run(["identity", "--state-dir", source.path]).status == 0)
        let work = TemporaryDirectory("backups")
        let good = work.file("good.tar")
        #expect(try CLI.run(["backup", good.path, "--state-dir", source.path]).status == 0)
        // Bad archives made by Python's own tarfile (the foreign, the escaping, the linked), a cut
        // one, and one that says it comes from a newer lanbridge.
        let make = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [
                "-c",
                """
                import io, json, sys, tarfile
                good, out = sys.argv[1], sys.argv[2]
                def tar(name, members):
                    with tarfile.open(out + "/" + name, "w", format=tarfile.USTAR_FORMAT) as t:
                        for info, data in members:
                            t.addfile(info, io.BytesIO(data) if data is not None else None)
                def file(name, data):
                    info = tarfile.TarInfo(name); info.size = len(data); return (info, data)
                link = tarfile.TarInfo("identity.key"); link.type = tarfile.SYMTYPE; link.linkname = "/etc/shadow"
                members = {m.name: m for m in tarfile.open(good)}
                manifest = tarfile.open(good).extractfile("lanbridge-backup.json").read()
                newer = json.loads(manifest); newer["format"] = 99
                tar("foreign.tar", [file("notes.txt", b"hello")])
                tar("escape.tar", [file("lanbridge-backup.json", manifest), file("../escaped", b"x")])
                tar("symlink.tar", [file("lanbridge-backup.json", manifest), (link, None)])
                tar("newer.tar", [file("lanbridge-backup.json", json.dumps(newer).encode())])
                data = open(good, "rb").read(); open(out + "/cut.tar", "wb").write(data[: len(data) // 2])
                """,
                good.path, work.path,
            ])
        #expect(make.wait() == 0, "\(make.standardError)")
        let reasons = [
            "foreign.tar": "does not start with lanbridge-backup.json", "escape.tar": "not a plain file name",
            "symlink.tar": "not a regular file", "newer.tar": "format 99", "cut.tar": "truncated",
        ]
        for (name, reason) in reasons.sorted(by: { $0.key < $1.key }) {
            let target = work.file("restored-\(name)")
            let run = try CLI.run(["restore", work.file(name).path, "--state-dir", target.path])
            #expect(run.status == 65 && run.stderr.contains(reason), "\(name): \(run)")
            #expect(!FileManager.default.fileExists(atPath: target.path), "\(name): nothing written")
            #expect(!FileManager.default.fileExists(atPath: work.file("escaped").path))
        }
    }
}
