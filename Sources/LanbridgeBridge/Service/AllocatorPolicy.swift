#if canImport(Glibc)
import CMalloc
#endif

/// How the daemon's allocator treats large buffers: freed ones stay in the process for the next
/// message instead of going back to the kernel.
///
/// A large message passes through buffers of its own size (the assembled message, the gateway's
/// frame, the halves of each regrowth). With glibc's defaults each was mapped fresh, or handed
/// back by trimming the heap as soon as it was freed, and every page faulted in again for the
/// next message: 737 page faults and 6 `brk` calls per 1 MiB message, 40% of the receive path's
/// time in the kernel (README, Performance). glibc's own dynamic rule moves its thresholds the
/// same way after it frees a mapped block, but to twice that block, which one message's buffers
/// together still pass; here they start where the rule would end.
public enum AllocatorPolicy {
    /// Blocks up to this size come from the heap (glibc's ceiling for it on 64-bit).
    public static let heapBlockLimit = 32 << 20
    /// Free memory at the heap's top kept for reuse, per arena, before it is given back.
    public static let retainedFreeBytes = 64 << 20

    /// Sets the policy for this process; false where the allocator has no such knob.
    @discardableResult
    public static func keepLargeBuffers() -> Bool {
        #if canImport(Glibc)
        mallopt(M_MMAP_THRESHOLD, Int32(heapBlockLimit)) == 1 && mallopt(M_TRIM_THRESHOLD, Int32(retainedFreeBytes)) == 1
        #else
        false
        #endif
    }
}
