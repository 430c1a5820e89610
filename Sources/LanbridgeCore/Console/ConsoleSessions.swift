import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

/// Who may use the console, as a value: one-time login links and the sessions they open, each
/// bound to the uid that asked for it (the kernel says which uid each loopback connection is,
/// `LoopbackPeer`). No I/O and no clock of its own (tests pass the time); `ConsoleAuth` (in LanbridgeBridge) holds it
/// under a lock. There is no global lockout: tokens are 256-bit, and a lockout let any local user
/// or web page lock the operator out (issue 36). Wrong tokens are counted per uid instead.
package struct ConsoleSessions: Sendable {
    package struct Limits: Sendable {
        package var loginLifetime: TimeInterval
        package var sessionIdle: TimeInterval
        /// Older links and sessions are evicted past these, so minting or logging in never fails.
        package var maxLogins: Int
        package var maxSessions: Int
        /// Wrong tokens are logged at most once a minute per uid, with a count.
        package var wrongLogInterval: TimeInterval
        package init(
            loginLifetime: TimeInterval = 60, sessionIdle: TimeInterval = 12 * 3600, maxLogins: Int = 16, maxSessions: Int = 32,
            wrongLogInterval: TimeInterval = 60
        ) {
            (self.loginLifetime, self.sessionIdle, self.maxLogins, self.maxSessions) = (loginLifetime, sessionIdle, maxLogins, maxSessions)
            self.wrongLogInterval = wrongLogInterval
        }
    }

    package struct Session: Sendable, Equatable {
        package let uid: UInt32
        /// Sent with every form; a POST without it changes nothing.
        package let csrf: String
        package let created: Date
        package var lastUsed: Date
        /// Requests put off with "Later", each with the state it had then: shown again once it changes.
        package var later: [String: String] = [:]
        /// The requests this session has seen; one it has not seen brings the put-off ones back.
        package var seenRequests: Set<String> = []
        /// What the last change did, shown once on the next page.
        package var flash: Flash?
        /// A new invite, shown once by the page the POST redirects to (a reload shows it no more,
        /// and creates nothing).
        package var newInvite: IssuedInvite?
    }

    package struct Flash: Sendable, Equatable {
        package let message: String
        package let error: Bool
        package init(message: String, error: Bool) { (self.message, self.error) = (message, error) }
    }

    package enum Refusal: String, Error, Sendable, Equatable {
        /// The connection's uid could not be learned: refused, never guessed.
        case unknownUser = "unknown_user"
        /// The token is used, expired or was never issued.
        case wrongToken = "wrong_token"
        /// The token or session belongs to another uid.
        case otherUser = "other_user"
    }

    package enum Login: Equatable {
        case session(id: String, Session)
        case refused(Refusal)
    }

    /// What the console shows of a session: never its ID or token.
    package struct Listing: Sendable, Equatable {
        package let uid: UInt32
        package let created: Date
        package let lastUsed: Date
    }

    package let limits: Limits
    /// Keyed by SHA-256 of the token: a lookup does not compare secrets byte by byte.
    private var logins: [String: (uid: UInt32, expires: Date)] = [:]
    private var sessions: [String: Session] = [:]
    /// Wrong tokens per uid not yet logged, and when that uid's last line was written. Bounded by
    /// the machine's users; entries go once logged and quiet for a minute.
    private var wrong: [UInt32: (count: Int, logged: Date)] = [:]

    package init(limits: Limits = Limits()) { self.limits = limits }

    package static func digest(_ token: String) -> String { Hex.encode(SHA256.hash(Array(token.utf8))) }

    package mutating func mintLogin(token: String, uid: UInt32, now: Date) {
        logins = logins.filter { $0.value.expires > now }
        if logins.count >= limits.maxLogins, let oldest = logins.min(by: { $0.value.expires < $1.value.expires })?.key { logins[oldest] = nil }
        logins[Self.digest(token)] = (uid, now.addingTimeInterval(limits.loginLifetime))
    }

    /// Exchanges a login token for a new session (`sessionId` and `csrf` are fresh random values
    /// from the caller), only for the uid it was issued to. A token works once; another user's
    /// attempt does not use it up.
    package mutating func redeem(token: String, uid: UInt32?, sessionId: String, csrf: String, now: Date) -> Login {
        guard let uid else { return .refused(.unknownUser) }
        let digest = Self.digest(token)
        guard let login = logins[digest], login.expires > now else {
            logins[digest] = nil
            return .refused(.wrongToken)
        }
        guard login.uid == uid else { return .refused(.otherUser) }
        logins[digest] = nil
        sessions = sessions.filter { now.timeIntervalSince($0.value.lastUsed) < limits.sessionIdle }
        if sessions.count >= limits.maxSessions, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key { sessions[oldest] = nil }
        let session = Session(uid: uid, csrf: csrf, created: now, lastUsed: now)
        sessions[sessionId] = session
        return .session(id: sessionId, session)
    }

    /// Counts a refused login of `uid`; returns how many to log now (once a minute per uid), or nil.
    package mutating func noteRefused(uid: UInt32?, now: Date) -> Int? {
        let key = uid ?? UInt32.max
        wrong = wrong.filter { $0.value.count > 0 || now.timeIntervalSince($0.value.logged) < limits.wrongLogInterval }
        var entry = wrong[key] ?? (0, .distantPast)
        entry.count += 1
        defer { wrong[key] = entry }
        guard now.timeIntervalSince(entry.logged) >= limits.wrongLogInterval else { return nil }
        let count = entry.count
        entry = (0, now)
        return count
    }

    /// The session behind a cookie, if it is live and `uid`'s; using it keeps it alive.
    package mutating func session(_ id: String?, uid: UInt32?, now: Date) -> Result<Session, Refusal>? {
        guard let id, var session = sessions[id] else { return nil }
        guard now.timeIntervalSince(session.lastUsed) < limits.sessionIdle else {
            sessions[id] = nil
            return nil
        }
        guard let uid else { return .failure(.unknownUser) }
        guard session.uid == uid else { return .failure(.otherUser) }
        session.lastUsed = now
        sessions[id] = session
        return .success(session)
    }

    package mutating func end(_ id: String) { sessions[id] = nil }

    /// The live sessions of `uid` (of everyone for nil), oldest first.
    package mutating func list(uid: UInt32?, now: Date) -> [Listing] {
        sessions = sessions.filter { now.timeIntervalSince($0.value.lastUsed) < limits.sessionIdle }
        return sessions.values.filter { uid == nil || $0.uid == uid }.map { Listing(uid: $0.uid, created: $0.created, lastUsed: $0.lastUsed) }
            .sorted { $0.created < $1.created }
    }

    /// Ends every session of `uid` (of everyone for nil) and its unused login links; returns how many sessions.
    package mutating func endAll(uid: UInt32?) -> Int {
        let before = sessions.count
        sessions = sessions.filter { uid != nil && $0.value.uid != uid }
        logins = logins.filter { uid != nil && $0.value.uid != uid }
        return before - sessions.count
    }

    package mutating func flash(_ flash: Flash, session id: String) { sessions[id]?.flash = flash }

    package mutating func keepNewInvite(_ issued: IssuedInvite, session id: String) { sessions[id]?.newInvite = issued }

    package mutating func takeNewInvite(session id: String) -> IssuedInvite? {
        defer { sessions[id]?.newInvite = nil }
        return sessions[id]?.newInvite
    }

    package mutating func takeFlash(session id: String) -> Flash? {
        defer { sessions[id]?.flash = nil }
        return sessions[id]?.flash
    }

    /// "Later": hide `requestId` while its state stays `fingerprint`.
    package mutating func putOff(_ requestId: String, fingerprint: String, session id: String) {
        sessions[id]?.later[requestId] = fingerprint
    }

    /// Which of `pending` (request ID and state) the session shows. A request it has not seen
    /// before brings back everything put off; a put-off request whose state changed comes back.
    package mutating func shown(_ pending: [(id: String, fingerprint: String)], session id: String) -> Set<String> {
        guard var session = sessions[id] else { return Set(pending.map(\.id)) }
        let ids = Set(pending.map(\.id))
        if !ids.isSubset(of: session.seenRequests) { session.later = [:] }
        session.seenRequests = ids
        session.later = session.later.filter { entry in pending.contains { $0.id == entry.key && $0.fingerprint == entry.value } }
        sessions[id] = session
        return ids.subtracting(session.later.keys)
    }
}
