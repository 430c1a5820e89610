import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
@testable import LanbridgeState
import LanbridgeStores
import Synchronization
import Testing
import TestSupport

struct PairingStoreTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func storeWithOneNode() throws -> (TemporaryDirectory, PairingStore, PairedNode) {
        let dir = TemporaryDirectory()
        let store = PairingStore(directory: StateDirectory(url: dir.url), clock: .fixed(now))
        let node = try store.update { state in
            let r = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.5", now: now)
            return try state.approveRevealed(r.requestId, access: .init(allow: ["canvas.*"]), now: now)
        }
        return (dir, store, node)
    }

    /// Issue 64: approved the way the CLI and the console approve (through the store, with the
    /// config's defaults), a browser's request gets the web's defaults whatever platform its page
    /// claims; one from an unverified page takes a grant only with `unverifiedPage`.
    @Test func aBrowsersApprovalTakesTheWebsDefaultsAndAnUnverifiedPagesTakesNoGrantUnasked() throws {
        let dir = TemporaryDirectory()
        let store = PairingStore(directory: StateDirectory(url: dir.url), clock: .fixed(now))
        func request(_ tier: BrowserTier) throws -> PendingRequest {
            var details = phone("\(tier.rawValue) page")  // the page claims ios, and declares a camera
            details.commands = ["canvas.present", "camera.list", "camera.snap"]
            return try store.update { state in
                let r = try state.challenge(key: someKey(), details: details, source: "10.0.0.9", browser: tier, now: now)
                state.setCode("123456", requestId: r.requestId)
                return r
            }
        }
        let verified = try request(.verified)
        let node = try store.approve(verified.requestId, code: "123456", unverified: false, grant: ApprovalGrant(), settings: BridgeSettings(), now: now)
        #expect(node.access.allow == AccessRules.defaults(forPlatform: "web").allow, "\(node.access.allow)")
        let unverified = try request(.unverified)
        let grant = ApprovalGrant(allow: ["camera.snap"])
        #expect(throws: PairingError.self) {
            try store.approve(unverified.requestId, code: "123456", unverified: false, grant: grant, settings: BridgeSettings(), now: now)
        }
        let granted = try store.approve(
            unverified.requestId, code: "123456", unverified: false, grant: grant, settings: BridgeSettings(), unverifiedPage: true, now: now)
        #expect(granted.pairingMethod == .browserUnverified && granted.access.allow.contains("camera.snap"))
    }

    /// Issue 50 §5: a request that looks like a paired device under a new key is approved only with
    /// a choice. Undecided, nothing changes (not even the code's count); `.replace` revokes the old
    /// key in the same write and keeps its rules; `.add` leaves two devices.
    @Test func aKeyChangedRequestIsApprovedOnlyAsAReplacementOrASecondDevice() throws {
        for choice in [nil] + KeyChangeChoice.allCases.map(Optional.some) {
            let (dir, store, old) = try storeWithOneNode()
            _ = try store.update { try $0.allow("camera.snap", node: old.nodeId.description) }
            let request = try store.update { state in
                let r = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.6", now: now)
                state.setCode("654321", requestId: r.requestId)
                return r
            }
            let files = try ["paired.json", "pending.json"].map { try Data(contentsOf: dir.file($0)) }
            let approve = {
                try store.approve(request.requestId, code: "654321", unverified: false, grant: ApprovalGrant(), settings: BridgeSettings(), keyChange: choice, now: now)
            }
            guard let choice else {
                #expect(throws: PairingError.keyChangeUndecided(request.requestId, name: "Ada's phone", previous: old.nodeId)) { try approve() }
                #expect(try ["paired.json", "pending.json"].map { try Data(contentsOf: dir.file($0)) } == files, "a refused approval changes nothing")
                continue
            }
            let new = try approve()
            let paired = try store.read().paired.nodes
            switch choice {
            case .replace:
                #expect(paired.map(\.nodeId) == [new.nodeId], "the old key is revoked in the same write")
                #expect(new.access.allow.contains("camera.snap") && new.access.confirmed.contains("camera.snap"), "its rules carried over: \(new.access)")
                #expect(try store.audit.entries().contains { $0.event == "node.revoked" && $0.nodeId == old.nodeId.description })
            case .add:
                #expect(Set(paired.map(\.nodeId)) == [old.nodeId, new.nodeId])
                #expect(!new.access.allow.contains("camera.snap"), "a second device starts from the defaults")
            }
        }
    }

    func mode(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as! NSNumber).intValue
    }

    @Test func statePersistsAcrossStoresWithPrivateModes() throws {
        let (dir, store, node) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        _ = try store.update { state in try state.requestPairing(key: someKey(), details: phone("Tab"), source: nil, now: now) }
        let reopened = try PairingStore(directory: StateDirectory(url: dir.url)).read()
        #expect(reopened.paired.nodes == [node])
        #expect(reopened.pending.requests.map(\.details.displayName) == ["Tab"])
        #expect(try mode(store.pairedURL) == 0o600)
        #expect(try mode(store.pendingURL) == 0o600)
    }

    @Test func pairedJSONHoldsNoSecrets() throws {
        let (dir, store, _) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        let identity = try IdentityStore(directory: StateDirectory(url: dir.url)).loadOrCreate()
        let text = try String(contentsOf: store.pairedURL, encoding: .utf8)
        let privateBase64 = identity.privateKey.withUnsafeBytes { Data($0).base64EncodedString() }
        #expect(!text.contains(privateBase64))
        // Every field is public metadata; a new field has to be added here on purpose.
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: store.pairedURL)) as! [String: Any]
        let node = (object["nodes"] as! [[String: Any]])[0]
        #expect(Set(node.keys) == ["nodeId", "publicKey", "details", "pairingMethod", "pairedAt", "firstSeen", "lastSeen", "access"])
        #expect(
            Set((node["details"] as! [String: Any]).keys) == [
                "displayName", "platform", "osVersion", "appVersion",
                "deviceModel", "caps", "commands", "flags",
            ])
    }

    @Test func aFailingUpdateWritesNothing() throws {
        let (dir, store, _) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        let before = try Data(contentsOf: store.pairedURL)
        #expect(throws: PairingError.unknownNode("x")) {
            try store.update { state in
                state.paired.nodes.removeAll()
                _ = try state.revoke(nodeId: "x")
            }
        }
        #expect(try Data(contentsOf: store.pairedURL) == before)
    }

    static let corruptions: [(String, @Sendable (String) -> String, String)] = [
        ("truncated", { String($0.prefix($0.count / 2)) }, "not valid JSON"),
        ("empty", { _ in "" }, "the file is empty"),
        ("garbage", { _ in "\u{0}\u{1}PK\u{3}\u{4}" }, "not valid JSON"),
        // Issue 51 §1: a newer lanbridge's file is refused with both versions and the way out, and left alone.
        (
            "future version", { $0.replacingOccurrences(of: "\"version\" : 1", with: "\"version\" : 2") },
            "it is format 2, written by a newer lanbridge; this one reads format 1. Nothing was changed"
        ),
        ("bad key", { $0.replacingOccurrences(of: "\"publicKey\" : \"", with: "\"publicKey\" : \"AAAA") }, "nodes[0].publicKey"),
        ("wrong type", { $0.replacingOccurrences(of: "\"caps\" : [", with: "\"caps\" : 7, \"x\" : [") }, "nodes[0].details.caps should be"),
        ("missing field", { $0.replacingOccurrences(of: "\"pairedAt\"", with: "\"pairedAtt\"") }, "nodes[0].pairedAt is missing"),
        (
            "forged node ID",
            { text in
                let id = text.range(of: #"[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}"#, options: .regularExpression)!
                return text.replacingCharacters(in: id, with: "0000-0000-0000-0000")
            }, "does not match its publicKey"
        ),
    ]

    @Test(arguments: corruptions.indices)
    func aCorruptFileIsNamedExplainedAndLeftAlone(case index: Int) throws {
        let (label, corrupt, expected) = Self.corruptions[index]
        let (dir, store, _) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        let broken = corrupt(try String(contentsOf: store.pairedURL, encoding: .utf8))
        try Data(broken.utf8).write(to: store.pairedURL)

        for attempt in [{ _ = try store.read() }, { _ = try store.update { $0.paired.nodes.removeAll() } }] {
            do {
                try attempt()
                Issue.record("\(label): loaded a corrupt file")
            } catch let error as StoreError {
                // A newer lanbridge's file is not corrupt: it has its own case, and the same exit status.
                let named: (URL, String)? =
                    switch error {
                    case let .corrupt(url, problem), let .newerFormat(url, problem): (url, problem)
                    default: nil
                    }
                guard let (url, problem) = named else { Issue.record("\(label): \(error)"); continue }
                #expect(url == store.pairedURL, "\(label)")
                #expect(problem.contains(expected), "\(label): \(problem)")
                #expect(error.description.hasPrefix(store.pairedURL.path))
            }
        }
        #expect(try String(contentsOf: store.pairedURL, encoding: .utf8) == broken, "\(label): never replaced")
    }

    @Test func aRequestLeftBehindByACrashBetweenTheTwoWritesIsResolved() throws {
        let (dir, store, node) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        // As if the writer died after paired.json but before pending.json.
        var pending = PendingFile()
        pending.requests = [
            PendingRequest(
                requestId: "abcdefgh", publicKey: node.publicKey, details: node.details,
                sourceAddress: nil, createdAt: now, expiresAt: now + 300)
        ]
        try AtomicFile.write(StateJSON.encode(pending), to: store.pendingURL)
        let state = try store.read()
        #expect(state.paired.nodes == [node])
        #expect(state.pending.requests.isEmpty)
    }

    @Test func temporariesOfDeadWritersAreSweptUnderTheLock() throws {
        let (dir, store, _) = try storeWithOneNode()
        defer { withExtendedLifetime(dir) {} }
        let stale = dir.file(".paired.json.tmp.99999.1")
        try Data("half a file".utf8).write(to: stale)
        _ = try store.update { $0.recordSeen($0.paired.nodes[0].nodeId, now: now + 1) }
        #expect(!FileManager.default.fileExists(atPath: stale.path))
    }

    /// Real threads, not Swift tasks: this blocks in flock polling and file I/O, and blocking the
    /// cooperative pool (two threads on this machine) would starve every async test in the run.
    @Test func threadsInOneProcessSerialiseToo() throws {
        let dir = TemporaryDirectory()
        let store = PairingStore(directory: StateDirectory(url: dir.url))
        let now = self.now
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10 {
                _ = try? store.update { state in
                    let r = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: now)
                    return try state.approveRevealed(r.requestId, access: .init(), now: now)
                }
            }
        }
        #expect(try store.read().paired.nodes.count == 80, "no lost updates")
    }

    /// Issue 61 §2: the handshake's lock-free read of invites.json puts lifetimes on the boot
    /// clock as the store's read does: three years of wall clock and 3 s of boot clock later, a
    /// 10-minute invite has 597 s left.
    @Test func theHandshakesReadOfInvitesAloneCountsTheBootClock() throws {
        let dir = TemporaryDirectory()
        let clock = Mutex((wall: now, boot: BootInstant(id: "boot-a", nanoseconds: 50_000_000_000)))
        let store = PairingStore(directory: StateDirectory(url: dir.url), clock: StoreClock { clock.withLock { $0 } })
        try store.update { state in _ = state.createInvite(name: nil, ttl: 600, now: now) }
        let wall = now.addingTimeInterval(3 * 365 * 86_400 + 3)
        clock.withLock { $0 = (wall, BootInstant(id: "boot-a", nanoseconds: 53_000_000_000)) }
        #expect(try store.readInvitesWithoutLock().invites.first?.expiresAt == wall.addingTimeInterval(597))
    }
}

struct IdentityStoreTests {
    @Test func createdOnceWithModeSixHundredThenReloaded() throws {
        let dir = TemporaryDirectory()
        let store = IdentityStore(directory: StateDirectory(url: dir.url.appendingPathComponent("nested")))
        let created = try store.loadOrCreate()
        let loaded = try #require(try store.load())
        #expect(loaded.publicKey == created.publicKey)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.url.path)
        #expect((attributes[.posixPermissions] as! NSNumber).intValue == 0o600)
        #expect((attributes[.size] as! NSNumber).intValue == 36)
    }

    @Test func aKeyOthersCanReadIsRefused() throws {
        let dir = TemporaryDirectory()
        let store = IdentityStore(directory: StateDirectory(url: dir.url))
        _ = try store.loadOrCreate()
        chmod(store.url.path, 0o644)
        #expect(throws: StoreError.insecurePermissions(store.url, mode: 0o644)) { try store.load() }
    }

    @Test func aDamagedKeyFileIsRefusedNotReplaced() throws {
        let dir = TemporaryDirectory()
        let store = IdentityStore(directory: StateDirectory(url: dir.url))
        for (bytes, problem) in [
            ([UInt8](repeating: 1, count: 10), "expected 36 bytes, found 10"),
            ([UInt8](repeating: 1, count: 36), "not a lanbridge identity (no LBK1 header)"),
        ] {
            try Data(bytes).write(to: store.url)
            chmod(store.url.path, 0o600)
            #expect(throws: StoreError.corrupt(store.url, problem)) { try store.loadOrCreate() }
            #expect(try Data(contentsOf: store.url) == Data(bytes))
        }
    }

    @Test func concurrentFirstUseAgreesOnOneKey() throws {
        let dir = TemporaryDirectory()
        let store = IdentityStore(directory: StateDirectory(url: dir.url))
        let keys = Mutex<Set<[UInt8]?>>([])  // real threads, for the same reason as above
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let key = try? store.loadOrCreate().publicKey
            keys.withLock { _ = $0.insert(key) }
        }
        let seen = keys.withLock { $0 }
        #expect(seen.count == 1 && seen.first! != nil)
    }

    @Test func stateDirectoryResolution() {
        #expect(StateDirectory.resolve(override: "/x", environment: ["LANBRIDGE_STATE_DIR": "/y"]).url.path == "/x")
        #expect(StateDirectory.resolve(environment: ["LANBRIDGE_STATE_DIR": "/y"], isRoot: true).url.path == "/y")
        #expect(StateDirectory.resolve(environment: [:], isRoot: true).url.path == "/var/lib/lanbridge")
        let absent = "/nonexistent/lanbridge"
        #expect(StateDirectory.resolve(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"], isRoot: false, system: absent).url.path == "/s/lanbridge")
        #expect(StateDirectory.resolve(environment: ["HOME": "/h"], isRoot: false, system: absent).url.path == "/h/.local/state/lanbridge")
        // A member of the service's group (here: whoever can use the directory) gets the service's state.
        let shared = TemporaryDirectory()
        #expect(StateDirectory.resolve(environment: ["HOME": "/h"], isRoot: false, system: shared.path).url.path == shared.path)
    }

    /// Issue 61 §1: which failed writes mean a state directory that takes no writes (the daemon
    /// keeps serving and looks again) and which do not (a corrupt file is not one).
    @Test func theFileSystemsRefusalsAreToldApartFromTheStoresOwn() {
        let url = URL(fileURLWithPath: "/x/paired.json")
        let readOnly = StoreError.notMade("pairing.approved A", "\(url.path): rename: \(String(cString: strerror(EROFS)))")
        #expect(readOnly.unwritableReason == "read-only file system")
        #expect(StoreError.io(url, "append: \(String(cString: strerror(ENOSPC)))").unwritableReason == "no space left on device")
        #expect(StoreError.corrupt(url, "not valid JSON").unwritableReason == nil)
        #expect(StoreError.lockTimeout(url, seconds: 10).unwritableReason == nil)
        #expect(StoreError.io(url, "cannot read: \(String(cString: strerror(EIO)))").unwritableReason == nil)
    }
}
