import Foundation
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// Issue 51 §2: state an earlier release wrote (Tests/Fixtures/state/<version>, made by
/// scripts/make-state-fixture with that release's package) opens whole in this one, and its
/// nodes reconnect and work without pairing again.
@Suite(.serialized)
struct UpgradeFixtureTests {
    static let root = Repository.url("Tests/Fixtures/state")
    static let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).sorted()

    /// A role's identity.key, as the fixture's README says: "LBK1" and SHA-256 of a public string.
    /// No private key is committed; these guard nothing.
    static func key(_ version: String, _ role: String) -> Data {
        Data("LBK1".utf8) + Data(SHA256.hash(Array("lanbridge state fixture \(version) \(role)".utf8)))
    }

    /// The fixture laid out as the release left it: its files with their modes, and the keys.
    static func lay(_ version: String, _ part: String, into directory: TemporaryDirectory, role: String) throws {
        let source = root.appendingPathComponent(version).appendingPathComponent(part)
        let modes = (try? String(contentsOf: root.appendingPathComponent(version).appendingPathComponent("modes"), encoding: .utf8)) ?? ""
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            try Data(contentsOf: source.appendingPathComponent(name)).write(to: directory.file(name))
            let mode = modes.split(separator: "\n").first { $0.hasSuffix(" " + name) }.flatMap { mode_t($0.prefix { $0 != " " }, radix: 8) } ?? 0o600
            chmod(directory.file(name).path, mode)
        }
        try key(version, role).write(to: directory.file(IdentityStore.fileName))
        chmod(directory.file(IdentityStore.fileName).path, 0o600)
        chmod(directory.path, 0o700)
    }

    @Test func thereIsAFixtureOfTheLastRelease() {
        #expect(Self.versions.contains("0.9.0"), "\(Self.versions)")
    }

    @Test(arguments: versions)
    func stateFromAnEarlierReleaseOpensWholeAndItsNodesWork(version: String) throws {
        let state = TemporaryDirectory("bridge")
        try Self.lay(version, "bridge", into: state, role: "bridge")
        // The files as the release wrote them, read without this version's types.
        struct Written: Decodable {
            struct Node: Decodable {
                struct Details: Decodable { var displayName: String }
                struct Access: Decodable { var allow: [String], deny: [String]? }
                struct Push: Decodable { var provider: String }
                var nodeId: String, details: Details, access: Access, push: Push?
            }
            struct Blocked: Decodable { var publicKey: String }
            struct Invite: Decodable { var id: String, expiresAt: Date }
            struct Request: Decodable { var requestId: String }
            var nodes: [Node]?, blocked: [Blocked]?, invites: [Invite]?, requests: [Request]?
        }
        func written(_ name: String) throws -> Written {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Written.self, from: Data(contentsOf: state.file(name)))
        }
        let paired = try written("paired.json"), invites = try written("invites.json"), pending = try written("pending.json")

        let gateway = try SimulatedGateway()
        let bridge = try BridgeDaemon(state: state, arguments: gateway.bridgeArguments)
        try bridge.waitForLog("gateway link up")
        let opened = try bridge.store.read()

        // Every pairing with its rules, every block, as the release wrote them.
        for node in paired.nodes ?? [] {
            let kept = opened.paired.nodes.first { $0.nodeId.description == node.nodeId }
            #expect(kept?.details.displayName == node.details.displayName, "\(node.nodeId) kept")
            #expect(kept?.access.allow == node.access.allow && kept?.access.deny ?? [] == node.access.deny ?? [], "its rules")
            #expect((kept?.push != nil) == (node.push != nil), "its push summary")
        }
        #expect(opened.paired.nodes.count == paired.nodes?.count)
        #expect(opened.paired.nodes.contains { $0.details.displayName == "Fixture phone" && $0.access.deny == ["canvas.navigate"] })
        #expect(!opened.paired.nodes.contains { $0.details.displayName == "Fixture laptop" }, "the revoked one stays revoked")
        #expect(opened.paired.blocked.map(\.publicKey.base64) == (paired.blocked ?? []).map(\.publicKey))
        #expect(!opened.paired.blocked.isEmpty)
        // The live invite and the pending request (while their time lasts; then the release, too,
        // would have let them go).
        for invite in invites.invites ?? [] where invite.expiresAt > Date() {
            #expect(opened.invites.invites.contains { $0.id == invite.id }, "invite \(invite.id)")
        }
        for request in pending.requests ?? [] {
            #expect(opened.pending.requests.contains { $0.requestId == request.requestId } || opened.pending.expired.contains { $0.requestId == request.requestId })
        }
        for node in opened.paired.nodes where node.push != nil {
            #expect(try PushTokens(directory: StateDirectory(url: state.url)).record(for: node.nodeId) != nil, "the push token of \(node.nodeId)")
        }
        let config = try CLI.run(["config", "show", "--json", "--state-dir", state.path])
        #expect(config.status == 0 && config.stdout.contains("2097152"), "config.json kept: \(config)")

        // The audit chain verifies across the upgrade (and the daemon adds to it).
        let verify = try CLI.run(["audit", "verify", "--state-dir", state.path])
        #expect(verify.status == 0, "\(verify)")

        // The nodes paired under the old release reconnect without pairing, and their invokes work.
        for (role, name) in [("phone", "Fixture phone"), ("tablet", "Fixture tablet")] {
            let nodeState = TemporaryDirectory("node")
            try Self.lay(version, "nodes/\(role)", into: nodeState, role: role)
            let node = try SimulatedNode(state: nodeState, port: bridge.port, arguments: ["--name", name, "--platform", "android"])
            let id = try node.waitFor("node")
            try node.waitFor("connected")
            let answer = try gateway.invoke(id, "device.echo", params: ["from": .string(version)])
            #expect(answer.ok, "\(role): \(String(describing: answer.error))")
            node.stop()
        }
        bridge.stop()
        let after = try CLI.run(["audit", "verify", "--state-dir", state.path])
        #expect(after.status == 0, "\(after)")
    }
}
