import Foundation
import LanbridgeCrypto
import LanbridgeProtocol

/// Who may use the console, as a value: one-time login links, the sessions they open, and the
/// lockout. No I/O and no clock of its own (tests pass the time); `ConsoleAuth` holds it under a lock.
struct ConsoleSessions: Sendable {
    struct Limits: Sendable {
        var loginLifetime: TimeInterval = 60
        var sessionIdle: TimeInterval = 12 * 3600
        /// Wrong login tokens within `lockWindow` that lock the login endpoint for `lockWindow`.
        var wrongLoginsToLock = 10
        var lockWindow: TimeInterval = 60
        /// Older links and sessions are evicted past these, so minting or logging in never fails.
        var maxLogins = 16
        var maxSessions = 32
    }

    struct Session: Sendable, Equatable {
        let uid: UInt32
        /// Sent with every form; a POST without it changes nothing.
        let csrf: String
        var lastUsed: Date
        /// Requests put off with "Later", each with the state it had then: shown again once it changes.
        var later: [String: String] = [:]
        /// The requests this session has seen; one it has not seen brings the put-off ones back.
        var seenRequests: Set<String> = []
        /// What the last change did, shown once on the next page.
        var flash: Flash?
    }

    struct Flash: Sendable, Equatable {
        let message: String
        let error: Bool
    }

    enum Login: Equatable {
        case session(id: String, Session)
        case refused
        case locked(until: Date)
    }

    let limits: Limits
    /// Keyed by SHA-256 of the token: a lookup does not compare secrets byte by byte.
    private var logins: [String: (uid: UInt32, expires: Date)] = [:]
    private var sessions: [String: Session] = [:]
    private var wrong: [Date] = []
    private(set) var lockedUntil: Date?

    init(limits: Limits = Limits()) { self.limits = limits }

    static func digest(_ token: String) -> String { Hex.encode(SHA256.hash(Array(token.utf8))) }

    mutating func mintLogin(token: String, uid: UInt32, now: Date) {
        logins = logins.filter { $0.value.expires > now }
        if logins.count >= limits.maxLogins, let oldest = logins.min(by: { $0.value.expires < $1.value.expires })?.key { logins[oldest] = nil }
        logins[Self.digest(token)] = (uid, now.addingTimeInterval(limits.loginLifetime))
    }

    /// Exchanges a login token for a new session (`sessionId` and `csrf` are fresh random values
    /// from the caller). A token works once; a wrong one counts toward the lockout.
    mutating func redeem(token: String, sessionId: String, csrf: String, now: Date) -> Login {
        if let until = lockedUntil, now < until { return .locked(until: until) }
        lockedUntil = nil
        guard let login = logins.removeValue(forKey: Self.digest(token)), login.expires > now else {
            wrong = wrong.filter { now.timeIntervalSince($0) < limits.lockWindow } + [now]
            if wrong.count >= limits.wrongLoginsToLock {
                lockedUntil = now.addingTimeInterval(limits.lockWindow)
                wrong = []
            }
            return .refused
        }
        sessions = sessions.filter { now.timeIntervalSince($0.value.lastUsed) < limits.sessionIdle }
        if sessions.count >= limits.maxSessions, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key { sessions[oldest] = nil }
        let session = Session(uid: login.uid, csrf: csrf, lastUsed: now)
        sessions[sessionId] = session
        return .session(id: sessionId, session)
    }

    /// The session behind a cookie, if it is live; using it keeps it alive.
    mutating func session(_ id: String?, now: Date) -> Session? {
        guard let id, var session = sessions[id] else { return nil }
        guard now.timeIntervalSince(session.lastUsed) < limits.sessionIdle else {
            sessions[id] = nil
            return nil
        }
        session.lastUsed = now
        sessions[id] = session
        return session
    }

    mutating func end(_ id: String) { sessions[id] = nil }

    mutating func flash(_ flash: Flash, session id: String) { sessions[id]?.flash = flash }

    mutating func takeFlash(session id: String) -> Flash? {
        defer { sessions[id]?.flash = nil }
        return sessions[id]?.flash
    }

    /// "Later": hide `requestId` while its state stays `fingerprint`.
    mutating func putOff(_ requestId: String, fingerprint: String, session id: String) {
        sessions[id]?.later[requestId] = fingerprint
    }

    /// Which of `pending` (request ID and state) the session shows. A request it has not seen
    /// before brings back everything put off; a put-off request whose state changed comes back.
    mutating func shown(_ pending: [(id: String, fingerprint: String)], session id: String) -> Set<String> {
        guard var session = sessions[id] else { return Set(pending.map(\.id)) }
        let ids = Set(pending.map(\.id))
        if !ids.isSubset(of: session.seenRequests) { session.later = [:] }
        session.seenRequests = ids
        session.later = session.later.filter { entry in pending.contains { $0.id == entry.key && $0.fingerprint == entry.value } }
        sessions[id] = session
        return ids.subtracting(session.later.keys)
    }
}
