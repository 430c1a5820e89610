import FoundationEssentials
import LanbridgeFiles
import Glibc
import NIOConcurrencyHelpers

/// Descriptors held back for the daemon's own file work. When a flood (or a limit set too low)
/// takes every other descriptor, a store read or write that fails for want of one gets the reserve
/// and runs again, so a revoke written by the CLI still reaches the core (issue 36: a flooded daemon
/// logged "Too many open files" and went on relaying to a revoked node). The reserve is taken back
/// at once; only `StateIO`'s one thread uses it, so it is never lent twice.
final class DescriptorReserve: Sendable {
    static let count = 8
    private let held: NIOLockedValueBox<[Int32]>

    init(count: Int = DescriptorReserve.count) {
        held = NIOLockedValueBox(Self.open(count))
    }

    deinit { held.withLockedValue { $0.forEach { close($0) } } }

    /// Runs `body`; if it failed for want of descriptors, runs it once more with the reserve freed.
    func run<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch  where Self.isOutOfDescriptors(error) {
            let freed = held.withLockedValue { fds -> Int in
                fds.forEach { close($0) }
                defer { fds = [] }
                return fds.count
            }
            guard freed > 0 else { throw error }
            defer { held.withLockedValue { $0 = Self.open(freed) } }
            return try body()
        }
    }

    /// EMFILE or ENFILE, as the store's errors carry it (their reason is the system's message).
    static func isOutOfDescriptors(_ error: any Error) -> Bool {
        let text = "\(error)"
        return [EMFILE, ENFILE].contains { text.contains(String(cString: strerror($0))) || ErrorText.posixCode(of: error) == $0 }
    }

    private static func open(_ count: Int) -> [Int32] {
        (0..<count).compactMap { _ in
            let fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
            return fd >= 0 ? fd : nil
        }
    }
}
