import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import NIOConcurrencyHelpers

/// Who may start a handshake, decided at accept time before any cryptography is spent.
///
/// Limits: unauthenticated connections in total and per source address, and handshake attempts per
/// address in a sliding window; an address that exceeds the window is locked out for a while.
/// A flood from one address is turned away at accept and cannot crowd out anyone else.
public struct AdmissionPolicy: Sendable {
    public struct Limits: Sendable {
        public var maxUnauthenticated = 64
        public var maxUnauthenticatedPerAddress = 8
        public var attemptsPerWindow = 20
        public var window: TimeInterval = 10
        public var lockout: TimeInterval = 60
        public init() {}
    }

    public enum Decision: Equatable, Sendable {
        case admit
        case refuse(String)
    }

    public let limits: Limits
    private var attempts: [String: [Date]] = [:]
    private var lockedUntil: [String: Date] = [:]
    private var unauthenticated: [String: Int] = [:]
    private var unauthenticatedTotal = 0

    public init(limits: Limits = .init()) {
        self.limits = limits
    }

    /// A new connection from `address`. `admit` counts it as unauthenticated until `authenticated`
    /// or `closed` is called for it.
    public mutating func connection(from address: String, now: Date) -> Decision {
        if let until = lockedUntil[address] {
            if until > now { return .refuse("\(address) is locked out for \(Int(until.timeIntervalSince(now)) + 1) s") }
            lockedUntil[address] = nil
        }
        var recent = (attempts[address] ?? []).filter { now.timeIntervalSince($0) < limits.window }
        recent.append(now)
        attempts[address] = recent
        if recent.count > limits.attemptsPerWindow {
            lockedUntil[address] = now.addingTimeInterval(limits.lockout)
            attempts[address] = nil
            return .refuse("\(address) made more than \(limits.attemptsPerWindow) attempts in \(Int(limits.window)) s; locked out for \(Int(limits.lockout)) s")
        }
        guard unauthenticatedTotal < limits.maxUnauthenticated else {
            return .refuse("\(limits.maxUnauthenticated) unauthenticated connections already open")
        }
        guard unauthenticated[address, default: 0] < limits.maxUnauthenticatedPerAddress else {
            return .refuse("\(address) already has \(limits.maxUnauthenticatedPerAddress) unauthenticated connections open")
        }
        unauthenticated[address, default: 0] += 1
        unauthenticatedTotal += 1
        return .admit
    }

    /// An admitted connection proved a paired key: it no longer counts against the limits.
    public mutating func authenticated(from address: String) {
        release(address)
    }

    /// An admitted connection that never authenticated went away.
    public mutating func closed(unauthenticatedFrom address: String) {
        release(address)
    }

    private mutating func release(_ address: String) {
        guard let count = unauthenticated[address], count > 0 else { return }
        unauthenticated[address] = count == 1 ? nil : count - 1
        unauthenticatedTotal -= 1
    }

    public var unauthenticatedCount: Int { unauthenticatedTotal }
}

/// The policy behind a lock, shared by the accept path (NIO threads) and the bridge actor.
final class Admission: Sendable {
    private let state: NIOLockedValueBox<AdmissionPolicy>

    init(limits: AdmissionPolicy.Limits) {
        state = NIOLockedValueBox(AdmissionPolicy(limits: limits))
    }

    func connection(from address: String) -> AdmissionPolicy.Decision {
        state.withLockedValue { $0.connection(from: address, now: Date()) }
    }

    func authenticated(from address: String) { state.withLockedValue { $0.authenticated(from: address) } }
    func closed(unauthenticatedFrom address: String) { state.withLockedValue { $0.closed(unauthenticatedFrom: address) } }
}

/// The PSKs of live invites, copied out of invites.json whenever it changes, so the handshake can
/// look one up without file I/O or the store lock.
final class InviteCache: Sendable {
    private struct Loaded {
        var entries: [[UInt8]: (psk: [UInt8], expiresAt: Date)] = [:]
        var version = ""
    }
    private let loaded = NIOLockedValueBox(Loaded())
    private let store: PairingStore

    init(store: PairingStore) { self.store = store }

    /// The file's version is left unknown: the state may be older than the file is now, so the
    /// next miss reads it again.
    func replace(with state: PairingState) {
        replace(with: state.invites, version: "")
    }

    private func replace(with file: InvitesFile, version: String) {
        var fresh: [[UInt8]: (psk: [UInt8], expiresAt: Date)] = [:]
        for invite in file.invites {
            if let id = try? Hex.decode(invite.id), let psk = try? Hex.decode(invite.psk) { fresh[id] = (psk, invite.expiresAt) }
        }
        loaded.withLockedValue { $0 = Loaded(entries: fresh, version: version) }
    }

    /// On a miss, an invite created a moment ago may not have reached the cache through inotify
    /// yet: if invites.json changed since it was loaded (one `stat`), read it again, unlocked.
    func psk(for id: [UInt8]) -> SecureBytes? {
        if let hit = lookup(id) { return hit }
        let version = store.invitesFileVersion()
        guard version != loaded.withLockedValue({ $0.version }), let file = try? store.readInvitesWithoutLock() else { return nil }
        replace(with: file, version: version)
        return lookup(id)
    }

    private func lookup(_ id: [UInt8]) -> SecureBytes? {
        loaded.withLockedValue { loaded in
            guard let entry = loaded.entries[id], entry.expiresAt > Date() else { return nil }
            return SecureBytes(copying: entry.psk)
        }
    }
}
