#if canImport(Glibc)
    import CMalloc
    import Glibc
#endif

/// How the daemon's allocator treats large buffers: freed ones stay in the process for the next
/// message instead of going back to the kernel, and what is still free after a while goes back.
///
/// A large message passes through buffers of its own size (the assembled message, the gateway's
/// frame, the halves of each regrowth). With glibc's defaults each was mapped fresh, or handed
/// back by trimming the heap as soon as it was freed, and every page faulted in again for the
/// next message: 737 page faults and 6 `brk` calls per 1 MiB message, 40% of the receive path's
/// time in the kernel (README, Performance). glibc's dynamic rule raises both thresholds too,
/// once it frees a mapped block: the mapping one to that block's size, the trim one to twice it,
/// which one message's buffers together still pass. Here they start above any message.
///
/// Kept buffers would otherwise stay for good (and a burst of connections leaves holes in the
/// heap): every `givingBackInterval`, free memory past `idleFreeBytes` is returned.
public enum AllocatorPolicy {
    /// Blocks up to this size come from the heap (glibc's ceiling for it on 64-bit).
    public static let heapBlockLimit = 32 << 20
    /// Free memory at the heap's top kept for reuse, per arena, before it is given back at once.
    public static let retainedFreeBytes = 64 << 20
    /// Free memory the periodic check leaves alone.
    public static let idleFreeBytes = 16 << 20
    public static let givingBackInterval: UInt32 = 10  // seconds

    /// Sets the policy for this process; false where the allocator has no such knob.
    @discardableResult
    public static func keepLargeBuffers() -> Bool {
        #if canImport(Glibc)
            mallopt(M_MMAP_THRESHOLD, Int32(heapBlockLimit)) == 1 && mallopt(M_TRIM_THRESHOLD, Int32(retainedFreeBytes)) == 1
        #else
            false
        #endif
    }

    /// The allocator's own account, over every arena (glibc's mallinfo2): bytes handed out and not
    /// yet freed, free bytes it holds in its heaps, and bytes in blocks mapped on their own. Growth
    /// in `inUse` is something kept (a table); growth in `free` alone is the allocator holding on.
    public struct Heap: Sendable, Equatable {
        public var inUse = 0, free = 0, mapped = 0
    }

    public static var heap: Heap {
        #if canImport(Glibc)
            let info = mallinfo2()
            return Heap(inUse: Int(info.uordblks), free: Int(info.fordblks), mapped: Int(info.hblkhd))
        #else
            Heap()
        #endif
    }

    /// Free bytes the allocator holds in its heaps (some of them perhaps already given back).
    public static var freeBytes: Int {
        #if canImport(Glibc)
            Int(mallinfo2().fordblks)
        #else
            0
        #endif
    }

    /// Returns free memory to the system when more than `threshold` bytes of it are held; true if it did.
    @discardableResult
    public static func giveBack(ifHoldingMoreThan threshold: Int) -> Bool {
        #if canImport(Glibc)
            guard freeBytes > threshold else { return false }
            malloc_trim(0)
            return true
        #else
            false
        #endif
    }

    /// For the daemon's whole life: a thread that gives free memory back every `givingBackInterval`.
    /// Its own thread, because trimming a large heap can take a few milliseconds.
    public static func startGivingBack() {
        #if canImport(Glibc)
            DetachedThread.start {
                while true {
                    sleep(givingBackInterval)
                    giveBack(ifHoldingMoreThan: idleFreeBytes)
                }
            }
        #endif
    }
}
