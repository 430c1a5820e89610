import Foundation
import Testing
import TestSupport

/// Issue 64, tier 1's first part: the bridge's own CA, checked with OpenSSL (software we did not
/// write): no root key is left anywhere, both CA certificates carry Name Constraints for the
/// bridge's names, a leaf has its SAN, EKU serverAuth and a bounded life, and a leaf for another
/// name signed by the intermediate is refused by the constraints.
@Suite(.enabled(if: ChildProcess.exitStatus("/usr/bin/openssl", ["version"]) == 0, "needs openssl (scripts/setup installs it)"))
struct BridgeCATests {
    /// Runs a command; its status and standard output and error together.
    func sh(_ arguments: [String], in directory: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func pemBlocks(_ text: String, _ kind: String) -> [String] {
        text.components(separatedBy: "-----BEGIN \(kind)-----").dropFirst().map {
            "-----BEGIN \(kind)-----" + $0.components(separatedBy: "-----END \(kind)-----")[0] + "-----END \(kind)-----\n"
        }
    }

    @Test func theCAVouchesForTheBridgesNamesOnlyAndKeepsNoRootKey() throws {
        let dir = TemporaryDirectory()
        let state = dir.file("state").path
        let made = try CLI.run(["ca", "init", "--state-dir", state, "--name", "bridge.local", "--ip", "192.168.1.5", "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        struct Summary: Decodable { let rootSha256: String; let rootFile: String; let names: [String] }
        let summary = try JSONDecoder().decode(Summary.self, from: Data(made.stdout.utf8))
        #expect(summary.names == ["bridge.local", "192.168.1.5"])
        #expect(summary.rootSha256.split(separator: " ").count == 16, "SHA-256 in sixteen groups of four, as a phone shows it")

        // No root key anywhere: the one private key kept is the intermediate's (its public key is the intermediate's).
        let ca = dir.file("state/ca")
        let files = try FileManager.default.contentsOfDirectory(atPath: ca.path)
        var keys: [String] = []
        for file in files { keys += pemBlocks(try String(contentsOf: ca.appendingPathComponent(file), encoding: .utf8), "PRIVATE KEY") }
        #expect(keys.count == 1, "\(files)")
        let intermediate = try String(contentsOf: ca.appendingPathComponent("intermediate.pem"), encoding: .utf8)
        try pemBlocks(intermediate, "CERTIFICATE")[0].write(to: dir.file("inter.crt"), atomically: true, encoding: .utf8)
        try keys[0].write(to: dir.file("inter.key"), atomically: true, encoding: .utf8)
        let keyPublic = try sh(["openssl", "pkey", "-in", "inter.key", "-pubout"], in: dir.url)
        let certPublic = try sh(["openssl", "x509", "-in", "inter.crt", "-noout", "-pubkey"], in: dir.url)
        #expect(keyPublic.status == 0 && keyPublic.output == certPublic.output, "the kept key is the intermediate's")
        #expect((try FileManager.default.attributesOfItem(atPath: ca.appendingPathComponent("intermediate.pem").path)[.posixPermissions] as? Int) == 0o600)

        // Both CA certificates: CA, constrained to the bridge's names.
        for certificate in [summary.rootFile, dir.file("inter.crt").path] {
            let text = try sh(["openssl", "x509", "-in", certificate, "-noout", "-text"], in: dir.url).output
            #expect(text.contains("X509v3 Name Constraints: critical") && text.contains("DNS:bridge.local") && text.contains("IP:192.168.1.5/255.255.255.255"), "\(certificate)")
            #expect(text.contains("CA:TRUE"))
        }

        // A leaf: SAN, EKU serverAuth, its days; verified strictly.
        let issued = try CLI.run(["ca", "issue", "--state-dir", state, "--name", "bridge.local", "--days", "90", "--out", dir.file("leaf.pem").path])
        #expect(issued.status == 0, "\(issued.stderr)")
        let leafPEM = try String(contentsOf: dir.file("leaf.pem"), encoding: .utf8)
        try pemBlocks(leafPEM, "CERTIFICATE")[0].write(to: dir.file("leaf.crt"), atomically: true, encoding: .utf8)
        let leaf = try sh(["openssl", "x509", "-in", "leaf.crt", "-noout", "-text", "-checkend", String(89 * 86400)], in: dir.url).output
        #expect(leaf.contains("DNS:bridge.local") && leaf.contains("TLS Web Server Authentication") && leaf.contains("CA:FALSE"))
        #expect(try sh(["openssl", "x509", "-in", "leaf.crt", "-noout", "-checkend", String(91 * 86400)], in: dir.url).status != 0, "it lives 90 days, not more")
        let verified = try sh(["openssl", "verify", "-x509_strict", "-CAfile", summary.rootFile, "-untrusted", "inter.crt", "leaf.crt"], in: dir.url)
        #expect(verified.status == 0, "\(verified.output)")

        // A leaf for another name, signed with the intermediate's key by other software: the constraints refuse it.
        #expect(
            try sh(
                [
                    "openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "evil.key",
                    "-subj", "/CN=evil.local", "-out", "evil.csr",
                ], in: dir.url
            ).status == 0)
        try "subjectAltName=DNS:evil.local\nextendedKeyUsage=serverAuth\n".write(to: dir.file("evil.ext"), atomically: true, encoding: .utf8)
        #expect(
            try sh(
                [
                    "openssl", "x509", "-req", "-in", "evil.csr", "-CA", "inter.crt", "-CAkey", "inter.key", "-CAcreateserial", "-days", "30",
                    "-extfile", "evil.ext", "-out", "evil.crt",
                ], in: dir.url
            ).status == 0)
        let refused = try sh(["openssl", "verify", "-x509_strict", "-CAfile", summary.rootFile, "-untrusted", "inter.crt", "evil.crt"], in: dir.url)
        #expect(refused.status != 0 && refused.output.contains("permitted subtree violation"), "\(refused.output)")
    }

    @Test func theCLISaysWhatIsWrongWithItsExitCodes() throws {
        let dir = TemporaryDirectory()
        let state = dir.file("state").path
        #expect(try CLI.run(["ca", "show", "--state-dir", state]).status == 69, "no CA yet")
        #expect(try CLI.run(["ca", "init", "--state-dir", state, "--name", "bad name.local"]).status == 64)
        #expect(try CLI.run(["ca", "init", "--state-dir", state, "--ip", "192.168.1.256"]).status == 64)
        #expect(try CLI.run(["ca", "init", "--state-dir", state, "--name", "bridge.local"]).status == 0)
        let again = try CLI.run(["ca", "init", "--state-dir", state, "--name", "bridge.local"])
        #expect(again.status == 73 && again.stderr.contains("--replace"), "a second root is not made silently")
        #expect(try CLI.run(["ca", "issue", "--state-dir", state, "--name", "bridge.local", "--days", "826", "--out", dir.file("x.pem").path]).status == 64)
        #expect(try CLI.run(["ca", "show", "--state-dir", state]).stdout.contains("bridge.local"))
    }
}
