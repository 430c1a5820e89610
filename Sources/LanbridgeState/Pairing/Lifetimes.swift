import FoundationEssentials
import LanbridgeProtocol

/// A point on the machine's boot clock (CLOCK_BOOTTIME: monotonic, and it counts a suspend), with
/// the boot it belongs to (`/proc/sys/kernel/random/boot_id`). Read by `BootClock` in the files
/// layer; a value here, so the rules below are tested with made-up ones.
public struct BootInstant: Sendable, Equatable {
    public var id: String
    public var nanoseconds: Int64
    public init(id: String, nanoseconds: Int64) { (self.id, self.nanoseconds) = (id, nanoseconds) }
}

/// How long a pending request or an invite has lived, counted on the boot clock (issue 61 §2): a
/// board with no real-time clock that boots three years behind and is stepped forward by NTP
/// expired every request at once, and one stepped back a day kept them a day.
///
/// Each record keeps its wall-clock `createdAt` and `expiresAt` (for people, and for the audit)
/// and, once written by a lanbridge that knows this, the boot it was made in and the boot clock
/// then. When the store is read, both dates are put back on the wall clock's present timeline
/// from the time elapsed on the boot clock, so everything that compares them with "now" (the
/// expiry, the refresh, the hard cap, what the CLI shows) counts elapsed time, whatever the wall
/// clock did meanwhile. A daemon restart keeps the count exact (same boot). After a reboot the
/// elapsed time is unknown: the wall clock's dates stand, but a record never has more than its
/// own lifetime left (a clock that came up behind cannot stretch it).
public enum Lifetimes {
    /// `createdAt` and `expiresAt` on the present timeline of `wall`.
    static func rebased(createdAt: Date, expiresAt: Date, bootId: String?, bootCreatedNs: Int64?, wall: Date, boot: BootInstant) -> (Date, Date) {
        let lifetime = max(0, expiresAt.timeIntervalSince(createdAt))
        if bootId == boot.id, let created = bootCreatedNs {
            let age = max(0, Double(boot.nanoseconds &- created) / 1e9)
            let start = wall.addingTimeInterval(-age)
            return (start, start.addingTimeInterval(lifetime))
        }
        let expires = min(expiresAt, wall.addingTimeInterval(lifetime))
        return (expires.addingTimeInterval(-lifetime), expires)
    }

    /// The boot clock at `createdAt` (on `wall`'s timeline).
    static func anchor(createdAt: Date, wall: Date, boot: BootInstant) -> Int64 {
        boot.nanoseconds &- Int64((wall.timeIntervalSince(createdAt) * 1e9).rounded())
    }
}

/// A record whose lifetime `Lifetimes` counts: a pending request, an invite or setup code.
protocol Lifetime {
    var createdAt: Date { get set }
    var expiresAt: Date { get set }
    var bootId: String? { get set }
    var bootCreatedNs: Int64? { get set }
}

extension PendingRequest: Lifetime {}
extension InviteRecord: Lifetime {}

extension Lifetime {
    mutating func rebase(wall: Date, boot: BootInstant) {
        (createdAt, expiresAt) = Lifetimes.rebased(
            createdAt: createdAt, expiresAt: expiresAt, bootId: bootId, bootCreatedNs: bootCreatedNs, wall: wall, boot: boot)
    }

    mutating func anchor(wall: Date, boot: BootInstant) {
        guard bootId != boot.id || bootCreatedNs == nil else { return }
        (bootId, bootCreatedNs) = (boot.id, Lifetimes.anchor(createdAt: createdAt, wall: wall, boot: boot))
    }

    mutating func shift(by delta: TimeInterval) {
        createdAt.addTimeInterval(delta)
        expiresAt.addTimeInterval(delta)
    }
}

/// One change to every lifetime in a list of records.
private enum LifetimeChange {
    case rebase(Date, BootInstant), anchor(Date, BootInstant), shift(TimeInterval)

    func apply<Record: Lifetime>(to records: inout [Record]) {
        for i in records.indices {
            switch self {
            case let .rebase(wall, boot): records[i].rebase(wall: wall, boot: boot)
            case let .anchor(wall, boot): records[i].anchor(wall: wall, boot: boot)
            case let .shift(delta): records[i].shift(by: delta)
            }
        }
    }
}

extension PairingState {
    private mutating func change(_ change: LifetimeChange) {
        change.apply(to: &pending.requests)
        change.apply(to: &invites.invites)
    }

    /// Puts every lifetime on `wall`'s present timeline (see `Lifetimes`): call on every read.
    public mutating func rebase(wall: Date, boot: BootInstant) { change(.rebase(wall, boot)) }

    /// The wall clock was stepped by `delta` seconds: every lifetime held in memory moves with it,
    /// so elapsed time stays what the boot clock says (the daemon's copy of the store, until its
    /// next read rebases it anyway).
    public mutating func shiftLifetimes(by delta: TimeInterval) { change(.shift(delta)) }

    /// Gives every record not yet anchored in this boot its place on the boot clock: call before
    /// every write, with the `wall` and `boot` the state was rebased with.
    public mutating func anchor(wall: Date, boot: BootInstant) { change(.anchor(wall, boot)) }
}

extension InvitesFile {
    /// `PairingState.rebase` for a reader of invites.json alone.
    public mutating func rebase(wall: Date, boot: BootInstant) { LifetimeChange.rebase(wall, boot).apply(to: &invites) }
}
