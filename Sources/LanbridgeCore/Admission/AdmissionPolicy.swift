import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Who may hold a connection that has not proved a paired key yet, decided at accept time before
/// any cryptography is spent, and re-decided as the connection moves on. Pure: the clock is an
/// argument.
///
/// - An address that makes too many attempts in a window is locked out for a while.
/// - Connections still in the handshake or the code exchange are capped per address (refused
///   past it) and in total, where the newest evicts the oldest connection of the address that holds
///   the most, instead of being refused: a paired node is only known after its handshake, so it
///   must always get that far.
/// - Each such connection has a deadline to become paired or to wait for the operator (shorter
///   under pressure, as is the handshake's own).
/// - Each listener (LAN, tailnet, …) has a cap of its own below the total, also evicting, so a
///   flood on one leaves room on the others.
/// - Connections waiting for the operator are counted apart, with a cap of their own (evicting too).
/// - Every table keyed by an address forgets it: attempts leave their window, lockouts end.
public struct AdmissionPolicy: Sendable {
    /// The config's entries (`admission` in config.json, whose defaults `BridgeSettings.Admission`
    /// holds: written once) and the policy's own constants.
    public struct Limits: Sendable {
        public var maxUnauthenticated: Int
        public var maxUnauthenticatedPerAddress: Int
        /// Unauthenticated connections one listener may hold (`maxUnauthenticated`: no cap of its own).
        public var maxUnauthenticatedPerListener: Int
        public var attemptsPerWindow: Int
        public var window: TimeInterval
        public var lockout: TimeInterval
        /// Connections waiting for the operator's decision (PairingState caps the requests too).
        public var maxWaiting: Int
        /// From accept to a paired session or a request waiting for the operator.
        public var unpairedDeadline: TimeInterval
        public var handshakeTimeout: TimeInterval = 5
        /// Above this share of `maxUnauthenticated` in use, the pressured deadlines apply.
        public var pressure = 0.75
        public var pressuredDeadline: TimeInterval = 3
        public var pressuredHandshakeTimeout: TimeInterval = 1
        /// Addresses remembered for attempts and lockouts, at most.
        public var maxAddresses = 4096

        public init() { self.init(BridgeSettings.Admission(), listeners: 1) }

        /// From the config: with several listeners, one may hold three quarters of all unless the
        /// config says otherwise (a flood on the LAN leaves room on the tailnet).
        public init(_ settings: BridgeSettings.Admission, listeners: Int) {
            maxUnauthenticated = settings[.maxUnauthenticated]
            maxUnauthenticatedPerAddress = settings[.maxUnauthenticatedPerAddress]
            attemptsPerWindow = settings[.attemptsPerWindow]
            window = TimeInterval(settings[.windowSeconds])
            lockout = TimeInterval(settings[.lockoutSeconds])
            unpairedDeadline = TimeInterval(settings[.unpairedDeadlineSeconds])
            maxWaiting = settings[.maxWaiting]
            maxUnauthenticatedPerListener =
                settings.values.value(.maxUnauthenticatedPerListener)
                ?? (listeners > 1 ? max(1, settings[.maxUnauthenticated] * 3 / 4) : settings[.maxUnauthenticated])
            pressuredDeadline = min(pressuredDeadline, unpairedDeadline)
        }
    }

    public typealias Slot = Int

    public enum Refusal: Equatable, Sendable, CustomStringConvertible {
        case lockedOut(String, seconds: Int)
        case tooManyAttempts(String, attempts: Int, window: Int, lockout: Int)
        case perAddressCap(String, limit: Int)

        public var description: String {
            switch self {
            case let .lockedOut(address, seconds): "\(address) is locked out for \(seconds) s"
            case let .tooManyAttempts(address, attempts, window, lockout):
                "\(address) made more than \(attempts) attempts in \(window) s; locked out for \(lockout) s"
            case let .perAddressCap(address, limit): "\(address) already has \(limit) unauthenticated connections open"
            }
        }

        /// For counting refusals by reason in the log's summary.
        public var kind: String {
            switch self {
            case .lockedOut: "locked out"
            case .tooManyAttempts: "too many attempts"
            case .perAddressCap: "over the per-address cap"
            }
        }
    }

    public enum Decision: Equatable, Sendable {
        /// Admitted as `slot`; close the `evicting` connections to make room.
        case admit(Slot, evicting: [Slot], handshakeTimeout: TimeInterval)
        case refuse(Refusal)

        public var isAdmitted: Bool { if case .admit = self { true } else { false } }
    }

    private enum Stage { case unauthenticated, waiting }
    private struct Entry {
        let address: String
        var listener = 0
        let since: Moment
        var deadline: Moment?
        var stage: Stage
    }

    public let limits: Limits
    private var slots: [Slot: Entry] = [:]
    private var nextSlot = 0
    private var attempts: WindowCounter<String>
    private var lockedUntil: [String: Moment] = [:]

    public init(limits: Limits = .init()) {
        self.limits = limits
        attempts = WindowCounter(window: limits.window, maxKeys: limits.maxAddresses)
    }

    public mutating func connection(from address: String, listener: Int = 0, now: Moment) -> Decision {
        if let until = lockedUntil[address] {
            if until > now { return .refuse(.lockedOut(address, seconds: Int(until.timeIntervalSince(now)) + 1)) }
            lockedUntil[address] = nil
        }
        if attempts.record(address, now: now, keep: limits.attemptsPerWindow + 1) > limits.attemptsPerWindow {
            attempts.forget(address)
            lock(address, now: now)
            return .refuse(.tooManyAttempts(address, attempts: limits.attemptsPerWindow, window: Int(limits.window), lockout: Int(limits.lockout)))
        }
        let unauthenticated = slots.filter { $0.value.stage == .unauthenticated }
        guard unauthenticated.count(where: { $0.value.address == address }) < limits.maxUnauthenticatedPerAddress else {
            return .refuse(.perAddressCap(address, limit: limits.maxUnauthenticatedPerAddress))
        }
        var evicting: [Slot] = []
        let onListener = unauthenticated.filter { $0.value.listener == listener }
        if onListener.count >= limits.maxUnauthenticatedPerListener, let victim = Self.crowded(onListener) {
            slots[victim] = nil
            evicting.append(victim)
        } else if unauthenticated.count >= limits.maxUnauthenticated, let victim = Self.crowded(Self.busiestListener(unauthenticated)) {
            slots[victim] = nil
            evicting.append(victim)
        }
        let pressured = Double(unauthenticatedCount + 1) > Double(limits.maxUnauthenticated) * limits.pressure
        nextSlot += 1
        slots[nextSlot] = Entry(
            address: address, listener: listener, since: now,
            deadline: now.addingTimeInterval(pressured ? limits.pressuredDeadline : limits.unpairedDeadline), stage: .unauthenticated)
        return .admit(nextSlot, evicting: evicting, handshakeTimeout: pressured ? limits.pressuredHandshakeTimeout : limits.handshakeTimeout)
    }

    /// The connection's pairing request now waits for the operator: it leaves the unauthenticated
    /// pool and its deadline (the request's own expiry applies). Returns waiting connections
    /// evicted to stay within `maxWaiting`.
    public mutating func waiting(_ slot: Slot) -> [Slot] {
        guard slots[slot] != nil else { return [] }
        slots[slot]?.stage = .waiting
        slots[slot]?.deadline = nil
        let waiting = slots.filter { $0.value.stage == .waiting }
        guard waiting.count > limits.maxWaiting, let victim = Self.crowded(waiting.filter { $0.key != slot }) else { return [] }
        slots[victim] = nil
        return [victim]
    }

    /// The connection proved a paired key, or went away: it no longer counts.
    public mutating func release(_ slot: Slot) {
        slots[slot] = nil
    }

    /// Unauthenticated connections past their deadline, no longer counted: close them.
    public mutating func overdue(now: Moment) -> [Slot] {
        let due = slots.filter { $0.value.deadline.map { $0 <= now } ?? false }.map(\.key)
        due.forEach { slots[$0] = nil }
        return due.sorted()
    }

    /// Forgets addresses whose attempts have left the window and whose lockouts have ended.
    public mutating func prune(now: Moment) {
        attempts.prune(now: now)
        lockedUntil = lockedUntil.filter { $0.value > now }
    }

    public var unauthenticatedCount: Int { slots.count { $0.value.stage == .unauthenticated } }
    public var waitingCount: Int { slots.count { $0.value.stage == .waiting } }
    /// Addresses the policy remembers (attempts and lockouts): bounded by `maxAddresses` each.
    public var addressesRemembered: Int { attempts.keys + lockedUntil.count }

    private mutating func lock(_ address: String, now: Moment) {
        lockedUntil[address] = now.addingTimeInterval(limits.lockout)
        if lockedUntil.count > limits.maxAddresses {
            lockedUntil = lockedUntil.filter { $0.value > now }
            // Still over: the lockouts ending soonest go, down to three quarters (amortised O(log n)).
            if lockedUntil.count > limits.maxAddresses {
                for (address, _) in lockedUntil.sorted(by: { $0.value < $1.value }).prefix(lockedUntil.count - limits.maxAddresses * 3 / 4) {
                    lockedUntil[address] = nil
                }
            }
        }
    }

    /// The connections of the listener that holds the most (the lower-numbered on a tie).
    private static func busiestListener(_ candidates: [Slot: Entry]) -> [Slot: Entry] {
        let counts = Dictionary(candidates.map { ($0.value.listener, 1) }, uniquingKeysWith: +)
        guard let busiest = counts.max(by: { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key })?.key else { return candidates }
        return candidates.filter { $0.value.listener == busiest }
    }

    /// The oldest connection of the address that holds the most.
    private static func crowded(_ candidates: [Slot: Entry]) -> Slot? {
        let counts = Dictionary(candidates.map { ($0.value.address, 1) }, uniquingKeysWith: +)
        return candidates.min { a, b in
            let (ca, cb) = (counts[a.value.address] ?? 0, counts[b.value.address] ?? 0)
            return ca != cb ? ca > cb : (a.value.since, a.key) < (b.value.since, b.key)
        }?.key
    }
}
