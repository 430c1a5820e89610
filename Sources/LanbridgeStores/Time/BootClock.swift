import FoundationEssentials
import Glibc
import LanbridgeState

/// The wall clock and the boot clock, read together: what the store puts lifetimes on
/// (`Lifetimes`). Tests that write with made-up dates give one that agrees with them.
public struct StoreClock: Sendable {
    public let read: @Sendable () -> (wall: Date, boot: BootInstant)
    public init(_ read: @escaping @Sendable () -> (wall: Date, boot: BootInstant)) { self.read = read }
    public static let system = StoreClock { (Date(), BootClock.now()) }
    /// A clock that says `wall` whenever it is read, with a boot clock in step with it.
    public static func fixed(_ wall: Date) -> StoreClock {
        StoreClock { (wall, BootInstant(id: "fixed", nanoseconds: Int64(wall.timeIntervalSince1970 * 1e9))) }
    }
}

/// The machine's boot clock and boot, for `Lifetimes`: CLOCK_BOOTTIME (monotonic, and it counts a
/// suspend) and the kernel's boot ID, which changes at every boot.
public enum BootClock {
    public static func now() -> BootInstant {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return BootInstant(id: bootId, nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    /// Read once: it does not change while the process runs. Without /proc, a value no boot has,
    /// so every record is treated as from another boot (its wall-clock dates, capped).
    static let bootId: String = {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let id = String(text.filter { !$0.isWhitespace })
        return id.isEmpty ? "unknown-\(getpid())-\(time(nil))" : id
    }()
}
