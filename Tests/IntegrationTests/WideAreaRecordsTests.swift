import Foundation
import Testing
import TestSupport

/// `lanbridge discover records` (issue 25, wide-area DNS-SD): what it prints is read by dnspython,
/// an implementation we did not write, and the browse chain of RFC 6763 §11 leads to the bridge.
@Suite(.enabled(if: Python.hasModule("dns"), "needs Python's dnspython (scripts/setup installs it)"))
struct WideAreaRecordsTests {
    struct Found: Decodable, Equatable {
        let instance, target: String
        let port: Int
        let txt: [String]
        let address: String?
    }

    func browse(_ arguments: [String], domain: String) throws -> Found {
        let state = TemporaryDirectory("wide-area")
        #expect(try CLI.run(["identity", "--state-dir", state.path]).status == 0)
        let printed = try CLI.run(["discover", "records", "--state-dir", state.path, "--domain", domain] + arguments)
        #expect(printed.status == 0, "\(printed.stderr)")
        let reader = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/wide_area_zone.py").path, domain], standardInput: true)
        reader.write(line: printed.stdout)
        reader.closeStandardInput()
        let line = try #require(try reader.nextLine(), "\(reader.standardError)")
        #expect(reader.wait() == 0)
        return try JSONDecoder().decode(Found.self, from: Data(line.utf8))
    }

    @Test func aBrowserFollowsTheRecordsToTheBridgeEvenWithANameThatNeedsEscaping() throws {
        let found = try browse(["--host", "100.101.102.103", "--port", "4000", "--name", #"Kitchen "bridge". 1"#], domain: "bridges.example.com")
        #expect(found.instance == #"Kitchen "bridge". 1"#)
        #expect(found.target == "lanbridge.bridges.example.com." && found.port == 4000 && found.address == "100.101.102.103")
        #expect(found.txt.first == "txtvers=1" && found.txt.contains(#"name=Kitchen "bridge". 1"#))
    }

    @Test func aTailnetAddressGetsAnAAAARecordAndAHostNameNone() throws {
        #expect(try browse(["--host", "fd7a:115c:a1e0::1", "--name", "Café"], domain: "home.arpa").address == "fd7a:115c:a1e0::1")
        let named = try browse(["--host", "nas.home.arpa", "--name", "NAS"], domain: "home.arpa")
        #expect(named.target == "nas.home.arpa." && named.address == nil)
    }
}
