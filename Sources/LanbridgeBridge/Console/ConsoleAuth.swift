import FoundationEssentials
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import NIOConcurrencyHelpers

/// `ConsoleSessions` shared by the control socket (which mints login links) and the HTTP
/// listener (which redeems them and checks sessions), with the real clock and randomness.
final class ConsoleAuth: Sendable {
    static let cookie = "lanbridge_session"
    private let sessions: NIOLockedValueBox<ConsoleSessions>
    private let clock: @Sendable () -> Date

    /// The clock counts elapsed time only (login links and sessions expire by it; nothing shows
    /// it): the monotonic one, so a step of the wall clock neither ends nor extends them.
    init(
        limits: ConsoleSessions.Limits = .init(),
        clock: @escaping @Sendable () -> Date = { Date(timeIntervalSinceReferenceDate: Moment.now.seconds) }
    ) {
        (sessions, self.clock) = (NIOLockedValueBox(ConsoleSessions(limits: limits)), clock)
    }

    static func randomToken() -> String {
        Base64URL.encode(SecureRandom.bytes(32))
    }

    /// A login token for `uid`, valid once, for a minute.
    func mintLogin(uid: UInt32) -> String {
        let token = Self.randomToken()
        sessions.withLockedValue { $0.mintLogin(token: token, uid: uid, now: clock()) }
        return token
    }

    /// A session for the request's uid, if the token was issued to that uid.
    func redeem(_ token: String, uid: UInt32?) -> ConsoleSessions.Login {
        let (id, csrf) = (Self.randomToken(), Self.randomToken())
        return sessions.withLockedValue { $0.redeem(token: token, uid: uid, sessionId: id, csrf: csrf, now: clock()) }
    }

    /// Counts a refusal of `uid`'s; how many to log now, if a line is due.
    func noteRefused(uid: UInt32?) -> Int? { sessions.withLockedValue { $0.noteRefused(uid: uid, now: clock()) } }

    /// The live session the request's cookie names, if it is the requesting uid's; a session of
    /// another uid is a refusal (the cookie leaked), not a missing login.
    func session(for request: HTTPRequest) -> Result<(id: String, session: ConsoleSessions.Session), ConsoleSessions.Refusal>? {
        guard let id = Self.cookieValue(request.header("Cookie")) else { return nil }
        return sessions.withLockedValue { s in s.session(id, uid: request.peerUID, now: clock()) }.map { $0.map { (id, $0) } }
    }

    func list(uid: UInt32?) -> [ConsoleSessions.Listing] { sessions.withLockedValue { $0.list(uid: uid, now: clock()) } }
    func endAll(uid: UInt32?) -> Int { sessions.withLockedValue { $0.endAll(uid: uid) } }

    func end(_ id: String) { sessions.withLockedValue { $0.end(id) } }
    func flash(_ message: String, error: Bool, session id: String) {
        sessions.withLockedValue { $0.flash(.init(message: message, error: error), session: id) }
    }
    func takeFlash(session id: String) -> ConsoleSessions.Flash? { sessions.withLockedValue { $0.takeFlash(session: id) } }
    func keepNewInvite(_ issued: InviteIssuer.Issued, session id: String) { sessions.withLockedValue { $0.keepNewInvite(issued, session: id) } }
    func takeNewInvite(session id: String) -> InviteIssuer.Issued? { sessions.withLockedValue { $0.takeNewInvite(session: id) } }
    func putOff(_ requestId: String, fingerprint: String, session id: String) {
        sessions.withLockedValue { $0.putOff(requestId, fingerprint: fingerprint, session: id) }
    }
    func shown(_ pending: [(id: String, fingerprint: String)], session id: String) -> Set<String> {
        sessions.withLockedValue { $0.shown(pending, session: id) }
    }

    /// `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's request carries it);
    /// no `Expires`: the server ends it after 12 h idle, the browser when it closes.
    static func setCookie(_ id: String) -> (String, String) {
        ("Set-Cookie", "\(cookie)=\(id); HttpOnly; SameSite=Strict; Path=/")
    }
    static let clearCookie = ("Set-Cookie", "\(cookie)=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")

    static func cookieValue(_ header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingWhitespace() == cookie { return String(pair[1]) }
        }
        return nil
    }
}
