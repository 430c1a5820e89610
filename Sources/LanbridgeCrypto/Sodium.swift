import CSodium

/// libsodium must be initialised once before use; every wrapper in this module calls `Sodium.ready()`.
public enum Sodium {
    private static let initialised: Bool = {
        // 0 = initialised now, 1 = already initialised, -1 = failure (no entropy source).
        sodium_init() >= 0
    }()

    @inline(__always)
    public static func ready() {
        precondition(initialised, "libsodium failed to initialise (no entropy source?)")
    }

    /// Overwrites memory in a way the compiler will not optimise away.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Constant-time equality for secrets and MACs.
    public static func constantTimeEqual(_ a: some ContiguousByteStorage, _ b: some ContiguousByteStorage) -> Bool {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                pa.count == pb.count && (pa.count == 0 || sodium_memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0)
            }
        }
    }
}

/// Anything whose bytes can be borrowed contiguously (arrays, slices, `SecureBytes`).
public protocol ContiguousByteStorage {
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ContiguousByteStorage where Element == UInt8 {}
extension ArraySlice: ContiguousByteStorage where Element == UInt8 {}
