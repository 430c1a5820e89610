#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Memory handling for secrets, the same whichever crypto backend is built.
public enum SecureMemory {
    /// Overwrites memory in a way the compiler will not optimise away.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Glibc)
            explicit_bzero(base, buffer.count)
        #else
            _ = memset_s(base, buffer.count, 0, buffer.count)
        #endif
    }

    /// Equality for secrets and MACs in time that depends only on the length.
    public static func constantTimeEqual(_ a: some ContiguousByteStorage, _ b: some ContiguousByteStorage) -> Bool {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                guard pa.count == pb.count else { return false }
                var difference: UInt8 = 0
                for index in 0..<pa.count { difference |= pa[index] ^ pb[index] }
                return difference == 0
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
