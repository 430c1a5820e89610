import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// Issue 51 §1: every state file says its format; StateFormat is the one place that judges it.
struct StateFormatTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A lanbridge one step ahead: paired.json format 2, migrated from 1 by renaming a field.
    static let next: StateFormat = {
        var versions = StateFormat.current.versions
        versions[.paired] = 2
        let rename = StateFormat.Migration(file: .paired, from: 1) { value in
            guard case var .object(fields) = value else { throw StoreError.corrupt(URL(fileURLWithPath: "/"), "not an object") }
            fields["nodes"] = fields.removeValue(forKey: "devices") ?? fields["nodes"] ?? .array([])
            return .object(fields)
        }
        return StateFormat(versions: versions, migrations: [rename], unversioned: StateFormat.current.unversioned)
    }()

    @Test func everyFileHasAFormatAndTheCurrentOnesNeedNoMigration() throws {
        for file in StateFormat.File.allCases {
            #expect(StateFormat.current.version(file) >= 1)
            #expect(try StateFormat.current.open(Data(#"{"version": 1}"#.utf8), as: file) == .current)
        }
    }

    @Test func aNewerFormatIsRefusedNamingBothVersions() {
        #expect(throws: StateFormat.Refusal.newer(.paired, found: 2, reads: 1)) {
            try StateFormat.current.open(Data(#"{"version": 2, "nodes": []}"#.utf8), as: .paired)
        }
        let text = StateFormat.Refusal.newer(.paired, found: 2, reads: 1).description
        #expect(text.contains("format 2") && text.contains("reads format 1") && text.contains("Nothing was changed"))
    }

    @Test func aMissingVersionIsRefusedWhereTheFileAlwaysCarriedOne() throws {
        #expect(throws: StateFormat.Refusal.missing(.paired)) { try StateFormat.current.open(Data(#"{"nodes": []}"#.utf8), as: .paired) }
        // The operator's config and files older daemons wrote without one are format 1.
        #expect(try StateFormat.current.open(Data(#"{"gateway": {}}"#.utf8), as: .config) == .current)
        #expect(try StateFormat.current.open(Data(#"{"lines": 0, "last": ""}"#.utf8), as: .auditHead) == .current)
    }

    @Test func anOlderFileIsMigratedStepByStepInMemory() throws {
        let opened = try Self.next.open(Data(#"{"version": 1, "devices": [], "blocked": []}"#.utf8), as: .paired)
        #expect(opened == .migrated(from: 1, to: 2, value: ["version": 2, "nodes": .array([]), "blocked": .array([])]))
        // A format no step leads from is refused, not guessed at.
        #expect(throws: StateFormat.Refusal.unknown(.paired, found: 0, reads: 2)) { try Self.next.open(Data(#"{"version": 0}"#.utf8), as: .paired) }
        // A version of the wrong type is left for the decoder to name with its path.
        #expect(try Self.next.open(Data(#"{"version": "2"}"#.utf8), as: .paired) == .current)
    }

    /// The store reads an older file as migrated without writing; `migrate` (the daemon's start)
    /// writes it once, write-ahead, with one audit line naming the versions, and the chain holds.
    @Test func theStoreMigratesOnceWithOneAuditLine() throws {
        let dir = TemporaryDirectory()
        let today = PairingStore(directory: StateDirectory(url: dir.url))
        let node = try today.update { state in
            let r = try state.requestPairing(
                key: PublicKey(bytes: SecureRandom.bytes(32))!, details: NodeDetails(displayName: "Tablet", platform: "android"), source: "10.0.0.5", now: now)
            return try state.approveRevealed(r.requestId, access: .init(allow: ["canvas.*"]), now: now)
        }
        let old = try Data(contentsOf: dir.file("paired.json"))
        let upgraded = PairingStore(directory: StateDirectory(url: dir.url), formats: Self.next)
        #expect(try upgraded.read().paired.nodes.map(\.nodeId) == [node.nodeId])
        #expect(try Data(contentsOf: dir.file("paired.json")) == old, "a read migrates in memory only")
        #expect(try upgraded.migrate(actor: "bridge") == ["paired.json format 1 → 2"])
        #expect(try upgraded.migrate(actor: "bridge") == [], "once")
        struct Versioned: Decodable { let version: Int }
        #expect(try JSONDecoder().decode(Versioned.self, from: Data(contentsOf: dir.file("paired.json"))).version == 2)
        #expect(try upgraded.read().paired.nodes.first?.access.allow == ["canvas.*"], "every rule kept")
        let lines = try upgraded.audit.entries().filter { $0.event == "state.migrated" }
        #expect(lines.map(\.detail) == ["paired.json format 1 → 2"] && lines.map(\.actor) == ["bridge"])
        #expect(try upgraded.audit.verify().isIntact)
        // And the lanbridge before it now refuses the file, changing nothing.
        let new = try Data(contentsOf: dir.file("paired.json"))
        #expect(throws: StoreError.self) { try today.update { _ = try $0.allow("camera.snap", node: node.nodeId.description) } }
        #expect(try Data(contentsOf: dir.file("paired.json")) == new)
    }

    /// The done-when: a file one version newer than the code knows, for each file a store writes,
    /// is refused by every reader and writer, and nothing is overwritten.
    @Test func aFileOneVersionNewerIsRefusedAndNothingIsOverwritten() throws {
        let dir = TemporaryDirectory()
        let state = StateDirectory(url: dir.url)
        let store = PairingStore(directory: state)
        let node = try store.update { state in
            let r = try state.requestPairing(
                key: PublicKey(bytes: SecureRandom.bytes(32))!, details: NodeDetails(displayName: "Tablet", platform: "android"), source: "10.0.0.5", now: now)
            return try state.approveRevealed(r.requestId, access: .init(allow: ["canvas.*"]), now: now)
        }
        _ = try store.update { $0.createInvite(name: "Phone", ttl: 600, now: now) }
        try PushTokens(directory: state).set(PushRegistration(provider: "fcm", token: "t"), for: node.nodeId, now: now)
        _ = try OpenClawDevices(directory: state).device(for: node.nodeId, platform: "android")
        for file in [StateFormat.File.paired, .pending, .invites, .auditHead, .pushTokens, .openClawDevices] {
            let url = dir.file(file.rawValue)
            let reads = StateFormat.current.version(file)
            let before = (try? Data(contentsOf: url)) ?? Data(#"{"version": 1, "requests": [], "expired": []}"#.utf8)
            var fields = try JSONDecoder().decode([String: JSONValue].self, from: before)
            fields["version"] = .number(Double(reads + 1))
            let newer = try JSONEncoder().encode(fields)
            try newer.write(to: url)
            let everything = try snapshot(dir)
            switch file {
            case .pushTokens:
                #expect(throws: StoreError.self) { try PushTokens(directory: state).set(PushRegistration(provider: "fcm", token: "u"), for: node.nodeId, now: now) }
                #expect(throws: StoreError.self) { try PushTokens(directory: state).keepOnly([]) }
            case .openClawDevices:
                #expect(throws: StoreError.self) { try OpenClawDevices(directory: state).keepOnly([]) }
            default:
                #expect(throws: StoreError.self) { try store.read() }
                #expect(throws: StoreError.self) { try store.migrate() }
                #expect(throws: StoreError.self) { try store.update { _ = try $0.allow("camera.snap", node: node.nodeId.description) } }
            }
            #expect(try snapshot(dir) == everything, "\(file.rawValue): nothing was written")
            try before.write(to: url)
        }
    }

    private func snapshot(_ dir: TemporaryDirectory) throws -> [String: Data] {
        try Dictionary(
            uniqueKeysWithValues: FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasSuffix(".lock") }.map { ($0, try Data(contentsOf: dir.file($0))) })
    }

    @Test func aNewerConfigIsRefusedBeforeItsKeysAreJudged() {
        #expect(throws: BridgeSettings.ConfigError.self) { try BridgeSettings.parse(Data(#"{"version": 2, "shinyNewKey": true}"#.utf8)) }
        do {
            _ = try BridgeSettings.parse(Data(#"{"version": 2, "shinyNewKey": true}"#.utf8))
        } catch {
            #expect(error.path == "version" && error.message.contains("format 2, written for a newer lanbridge"), "\(error)")
        }
        #expect((try? BridgeSettings.parse(Data(#"{"version": 1}"#.utf8))) != nil)
        #expect((try? BridgeSettings.parse(Data(#"{"version": [1]}"#.utf8))) == nil)
    }

    /// runtime.json is written by hand (compact, the nodes without `JSONEncoder`) and read with the
    /// decoder as ever: every field comes back.
    @Test func theRuntimeFileReadsBackWhatWasWritten() throws {
        let dir = TemporaryDirectory()
        let file = RuntimeStatusFile(directory: StateDirectory(url: dir.url))
        let second = Date(timeIntervalSince1970: 1_795_000_000)
        var status = RuntimeStatus(bridgeName: "b \"q\"\n", listening: ["127.0.0.1:1", "[::1]:2"], startedAt: second)
        status.reachable = ["10.0.0.2:7"]
        status.mdns = "published"
        status.gateway = "connected to ws://127.0.0.1:3/"
        status.canvas = .init(listening: ["0.0.0.0:4"], tlsSha256: "ab", upstream: "http://127.0.0.1:5")
        status.openClawApps = ["wss://0.0.0.0:6"]
        var plain = RuntimeStatus.Node(address: "10.0.0.5", foreground: true, connectedAt: second.addingTimeInterval(-86_400 * 400))
        plain.gatewaySession = "up"
        var held = RuntimeStatus.Node(address: "fe80::1%eth0", foreground: false, connectedAt: second)
        (held.gatewayDeviceId, held.gatewayApproval) = ("dev", .device("req-1"))
        status.nodes = ["AAAA-BBBB": plain, "CCCC-DDDD": held, "EEEE-FFFF": .init(address: "x", foreground: false, connectedAt: second)]
        try file.write(status)
        #expect(file.read() == status)
        // The file names a node's fields one by one: one added to the type must be added there too.
        #expect(Mirror(reflecting: held).children.map { $0.label ?? "" } == ["address", "foreground", "connectedAt", "gatewayDeviceId", "gatewaySession", "gatewayApproval"])
        let text = try String(contentsOf: file.url, encoding: .utf8)
        #expect(text.hasSuffix("}\n") && !text.dropLast().contains("\n"), "one line: \(text)")
    }

    @Test func aNewerRuntimeFileIsNotTrusted() throws {
        let dir = TemporaryDirectory()
        let file = RuntimeStatusFile(directory: StateDirectory(url: dir.url))
        try file.write(RuntimeStatus(bridgeName: "b", listening: [], startedAt: now))
        #expect(file.read()?.version == 1)
        var fields = try JSONDecoder().decode([String: JSONValue].self, from: Data(contentsOf: file.url))
        fields["version"] = 2
        try JSONEncoder().encode(fields).write(to: file.url)
        #expect(file.read() == nil)
        fields["version"] = nil
        try JSONEncoder().encode(fields).write(to: file.url)
        #expect(file.read() != nil, "written by 0.9.0, without a version")
    }
}
