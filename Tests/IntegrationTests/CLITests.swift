import Foundation
import LanbridgeState
import LanbridgeProtocol
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
}
