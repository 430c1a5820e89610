import Foundation
@testable import LanbridgeCore
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Testing

/// A node's `push.register` (PROTOCOL.md §9.6) through the core: checked, stored, answered, and
/// with OpenClaw passed on as `push.apns.register`.
struct BridgeCorePushTests {
    let base = BridgeCoreTests()
    static let token = String(repeating: "0f", count: 32)

    func register(_ core: inout BridgeCore, _ fields: String, id: String = "p1") -> [BridgeAction] {
        core.on(.received(Array(#"{"type":"push.register","id":"\#(id)",\#(fields)}"#.utf8), from: 1), now: base.t0 + 1, wall: base.wall)
    }

    static func stored(_ actions: [BridgeAction]) -> (id: Int, PushRegistration)? {
        for case let .updateStore(operation) in actions {
            if case let .registerPush(_, registration, _, _) = operation.change { return (operation.id, registration) }
        }
        return nil
    }

    @Test func aValidRegistrationIsStoredThenAnswered() throws {
        var core = try base.core()
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let asked = register(&core, #""provider":"apns","token":"\#(Self.token)","environment":"sandbox","topic":"com.example.app""#)
        let (operation, registration) = try #require(Self.stored(asked))
        #expect(registration == PushRegistration(provider: "apns", token: Self.token, environment: "sandbox", topic: "com.example.app"))
        #expect(BridgeCoreTests.sent(asked, to: 1).isEmpty, "answered once stored, not before")
        let done = core.on(.storeUpdated(operation: operation, .success(.done)), now: base.t0 + 2)
        #expect(BridgeCoreTests.sent(done, to: 1).compactMap { $0 as? PushResult } == [PushResult(id: "p1")])
        #expect(!done.contains { if case .openClawEvent = $0 { true } else { false } }, "§12 mode: stored only")
    }

    @Test(arguments: [
        #""provider":"APNS","token":"abc""#,  // provider not lowercase
        #""provider":"fcm","token":"has space""#,  // not visible ASCII
        #""provider":"apns","token":"zz","topic":"t""#,  // not hex, too short
        #""provider":"apns","token":"\#(token)""#,  // no topic
        #""provider":"apns","token":"\#(token)","topic":"t","environment":"dev""#,
    ])
    func anInvalidRegistrationIsRefusedAndNothingIsStored(fields: String) throws {
        var core = try base.core()
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let refused = register(&core, fields)
        #expect(Self.stored(refused) == nil)
        let answer = try #require(BridgeCoreTests.sent(refused, to: 1).compactMap { $0 as? PushResult }.first)
        #expect(!answer.ok && answer.error?.code == ErrorMessage.invalidRequest)
        #expect(answer.error?.message.contains(Self.token) == false, "the token is never echoed")
    }

    @Test func registrationsCountAsEvents() throws {
        var core = try base.core()
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        var limited: PushResult?
        for n in 0...core.settings.limits[.eventsPerMinute] {
            limited = BridgeCoreTests.sent(register(&core, #""provider":"ntfy","token":"topic-\#(n)""#, id: "p\(n)"), to: 1).compactMap { $0 as? PushResult }.first
        }
        #expect(limited?.error?.code == ErrorMessage.rateLimited)
    }

    @Test func withOpenClawAnAPNsTokenGoesToTheGatewayAsItReadsIt() throws {
        var core = try base.core(gatewayUp: false, gateway: .openClaw)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let asked = register(&core, #""provider":"apns","token":"\#(Self.token)","environment":"production","topic":"com.example.app""#)
        let (operation, _) = try #require(Self.stored(asked))
        let done = core.on(.storeUpdated(operation: operation, .success(.done)), now: base.t0 + 2)
        let events = done.compactMap { if case let .openClawEvent(_, event, payload, _) = $0 { (event, payload) } else { nil } }
        #expect(events.count == 1 && events.first?.0 == "push.apns.register")
        #expect(events.first?.1 == ["transport": "direct", "token": .string(Self.token), "topic": "com.example.app", "environment": "production"])
    }
}
