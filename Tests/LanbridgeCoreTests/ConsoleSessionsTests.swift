import Foundation
import Testing
@testable import LanbridgeCore

/// The console's login links and sessions, bound to the uid that asked, on a fake clock.
struct ConsoleSessionsTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aLoginLinkWorksOnceAndOnlyForAMinute() {
        var s = ConsoleSessions()
        s.mintLogin(token: "tok", uid: 1000, now: t0)
        guard case let .session(id, session) = s.redeem(token: "tok", uid: 1000, sessionId: "s1", csrf: "c1", now: t0.addingTimeInterval(59)) else {
            Issue.record("a fresh link opens a session")
            return
        }
        #expect(id == "s1" && session.uid == 1000 && session.csrf == "c1")
        #expect(s.redeem(token: "tok", uid: 1000, sessionId: "s2", csrf: "c2", now: t0.addingTimeInterval(59)) == .refused(.wrongToken))  // replayed

        s.mintLogin(token: "late", uid: 1000, now: t0)
        #expect(s.redeem(token: "late", uid: 1000, sessionId: "s3", csrf: "c3", now: t0.addingTimeInterval(60)) == .refused(.wrongToken))
    }

    /// Issue 36: `nobody` read the token from argv and redeemed it before the operator's browser.
    @Test func aLoginLinkIsRedeemableOnlyByTheUidThatAskedAndAnotherUsersTryDoesNotUseItUp() {
        var s = ConsoleSessions()
        s.mintLogin(token: "tok", uid: 1000, now: t0)
        #expect(s.redeem(token: "tok", uid: 65534, sessionId: "x", csrf: "y", now: t0) == .refused(.otherUser))
        #expect(s.redeem(token: "tok", uid: nil, sessionId: "x", csrf: "y", now: t0) == .refused(.unknownUser), "an unknown uid is refused, not guessed")
        guard case .session = s.redeem(token: "tok", uid: 1000, sessionId: "s", csrf: "c", now: t0.addingTimeInterval(1)) else {
            Issue.record("the operator's own browser still logs in")
            return
        }
    }

    /// Issue 36: the cookie leaked to another user's server on another loopback port, and replaying it worked.
    @Test func aSessionAnswersOnlyToItsUid() {
        var s = ConsoleSessions()
        s.mintLogin(token: "t", uid: 1000, now: t0)
        _ = s.redeem(token: "t", uid: 1000, sessionId: "s", csrf: "c", now: t0)
        #expect(s.session("s", uid: 65534, now: t0) == .failure(.otherUser))
        #expect(s.session("s", uid: nil, now: t0) == .failure(.unknownUser))
        #expect((try? s.session("s", uid: 1000, now: t0)?.get())?.uid == 1000)
    }

    /// Issue 36: ten wrong tokens from anyone locked every operator out for a minute.
    @Test func wrongTokensLockNobodyOutAndAreCountedPerUidOnceAMinute() {
        var s = ConsoleSessions()
        var logged: [Int] = []
        for k in 0..<20 {
            _ = s.redeem(token: "bad\(k)", uid: 65534, sessionId: "x", csrf: "y", now: t0.addingTimeInterval(Double(k)))
            if let count = s.noteRefused(uid: 65534, now: t0.addingTimeInterval(Double(k))) { logged.append(count) }
        }
        s.mintLogin(token: "good", uid: 1000, now: t0.addingTimeInterval(20))
        guard case .session = s.redeem(token: "good", uid: 1000, sessionId: "s", csrf: "c", now: t0.addingTimeInterval(20)) else {
            Issue.record("the operator logs in, whatever another uid sent")
            return
        }
        #expect(logged == [1], "the first is logged at once, the rest counted")
        #expect(s.noteRefused(uid: 65534, now: t0.addingTimeInterval(61)) == 20, "a minute later: the count so far")
        #expect(s.noteRefused(uid: 1000, now: t0.addingTimeInterval(61)) == 1, "each uid has its own count")
    }

    @Test func aSessionEndsAfterTwelveHoursIdleAndUseKeepsItAlive() {
        var s = ConsoleSessions()
        s.mintLogin(token: "t", uid: 1, now: t0)
        _ = s.redeem(token: "t", uid: 1, sessionId: "s", csrf: "c", now: t0)
        #expect(s.session("s", uid: 1, now: t0.addingTimeInterval(11 * 3600)) != nil)
        #expect(s.session("s", uid: 1, now: t0.addingTimeInterval(22 * 3600)) != nil)  // 11 h after the last use
        #expect(s.session("s", uid: 1, now: t0.addingTimeInterval(34 * 3600 + 1)) == nil)
        #expect(s.session(nil, uid: 1, now: t0) == nil && s.session("unknown", uid: 1, now: t0) == nil)
    }

    @Test func tablesAreBoundedByEvictingTheOldest() {
        var s = ConsoleSessions(limits: .init(maxLogins: 2, maxSessions: 2))
        for k in 0..<3 { s.mintLogin(token: "t\(k)", uid: 1, now: t0.addingTimeInterval(Double(k))) }
        #expect(s.redeem(token: "t0", uid: 1, sessionId: "a", csrf: "c", now: t0.addingTimeInterval(3)) == .refused(.wrongToken))  // evicted
        for (k, token) in ["t1", "t2"].enumerated() {
            if case .session = s.redeem(token: token, uid: 1, sessionId: "s\(k)", csrf: "c", now: t0.addingTimeInterval(Double(4 + k))) {} else { Issue.record("\(token)") }
        }
        s.mintLogin(token: "t3", uid: 1, now: t0.addingTimeInterval(6))
        _ = s.redeem(token: "t3", uid: 1, sessionId: "s2", csrf: "c", now: t0.addingTimeInterval(7))
        #expect(s.session("s0", uid: 1, now: t0.addingTimeInterval(8)) == nil)  // the least recently used went
        #expect(s.session("s1", uid: 1, now: t0.addingTimeInterval(8)) != nil && s.session("s2", uid: 1, now: t0.addingTimeInterval(8)) != nil)
    }

    @Test func sessionsAreListedAndEndedPerUid() {
        var s = ConsoleSessions()
        for (k, uid) in [1000, 1000, 1001].enumerated() {
            s.mintLogin(token: "t\(k)", uid: UInt32(uid), now: t0)
            _ = s.redeem(token: "t\(k)", uid: UInt32(uid), sessionId: "s\(k)", csrf: "c", now: t0.addingTimeInterval(Double(k)))
        }
        #expect(s.list(uid: 1000, now: t0.addingTimeInterval(5)).count == 2)
        #expect(s.list(uid: nil, now: t0.addingTimeInterval(5)).count == 3)
        #expect(s.endAll(uid: 1000) == 2)
        #expect(s.session("s0", uid: 1000, now: t0.addingTimeInterval(6)) == nil && s.session("s2", uid: 1001, now: t0.addingTimeInterval(6)) != nil)
        #expect(s.endAll(uid: nil) == 1)
    }

    @Test func laterHidesARequestUntilItChangesOrAnotherOneArrives() {
        var s = ConsoleSessions()
        s.mintLogin(token: "t", uid: 1, now: t0)
        _ = s.redeem(token: "t", uid: 1, sessionId: "s", csrf: "c", now: t0)
        #expect(s.shown([("a", "1"), ("b", "1")], session: "s") == ["a", "b"])
        s.putOff("a", fingerprint: "1", session: "s")
        #expect(s.shown([("a", "1"), ("b", "1")], session: "s") == ["b"])
        #expect(s.shown([("a", "1")], session: "s") == [])  // b went; a stays put off
        #expect(s.shown([("a", "2")], session: "s") == ["a"])  // a changed (a new code, say)
        s.putOff("a", fingerprint: "2", session: "s")
        #expect(s.shown([("a", "2")], session: "s") == [])
        #expect(s.shown([("a", "2"), ("c", "1")], session: "s") == ["a", "c"])  // a new device asked
    }

    @Test func aFlashIsShownOnce() {
        var s = ConsoleSessions()
        s.mintLogin(token: "t", uid: 1, now: t0)
        _ = s.redeem(token: "t", uid: 1, sessionId: "s", csrf: "c", now: t0)
        s.flash(.init(message: "done", error: false), session: "s")
        #expect(s.takeFlash(session: "s") == .init(message: "done", error: false))
        #expect(s.takeFlash(session: "s") == nil)
    }
}
