#if canImport(Glibc)
    import Glibc
    @testable import LanbridgeBridge
    import Testing

    /// The daemon's allocator policy: a large buffer freed after one message is reused for the next,
    /// not handed back to the kernel and faulted in again page by page. Serialized: the two tests
    /// would otherwise find each other's freed buffers.
    @Suite(.serialized) struct AllocatorPolicyTests {
        /// Minor page faults on this thread only, so tests running beside it do not count.
        private func faults(_ body: () -> Void) -> Int {
            let thread: Int32 = 1  // RUSAGE_THREAD, a GNU extension Glibc's module does not import
            var before = rusage(), after = rusage()
            getrusage(thread, &before)
            body()
            getrusage(thread, &after)
            return after.ru_minflt - before.ru_minflt
        }

        /// One large message's buffer: every page written, then freed.
        private func message(bytes: Int) {
            var buffer = [UInt8](repeating: 0, count: bytes)
            buffer.withUnsafeMutableBufferPointer { pages in
                for offset in stride(from: 0, to: pages.count, by: 4096) { pages[offset] = 1 }
            }
            withExtendedLifetime(buffer) {}
        }

        @Test func aSecondLargeMessageFindsItsPagesInPlace() {
            #expect(AllocatorPolicy.keepLargeBuffers())
            let size = 24 << 20, pages = size / 4096
            message(bytes: size)  // the first one may fault every page in
            let second = faults { message(bytes: size) }
            // glibc's defaults map a 24 MiB block fresh (6,144 faults) and unmap it when it is freed.
            #expect(second < pages / 8, "the second 24 MiB buffer faulted \(second) of its \(pages) pages in again")
        }

        @Test func aHoleLeftInTheHeapGoesBack() {
            #expect(AllocatorPolicy.keepLargeBuffers())
            let size = 24 << 20, pages = size / 4096
            // A freed buffer with a live one as large after it: a hole in the heap, not its free top
            // (which glibc gives back by itself past retainedFreeBytes, and only then, in a thread's heap).
            var large: [UInt8]? = [UInt8](repeating: 1, count: size)
            let after = [UInt8](repeating: 2, count: size)
            large = nil
            #expect(AllocatorPolicy.freeBytes >= size)
            #expect(!AllocatorPolicy.giveBack(ifHoldingMoreThan: Int.max))
            #expect(AllocatorPolicy.giveBack(ifHoldingMoreThan: size / 2))
            // Given back: a buffer of that size is faulted in again.
            let faulted = faults { message(bytes: size) }
            #expect(faulted > pages / 2, "only \(faulted) of \(pages) pages faulted in after giving back")
            withExtendedLifetime((large, after)) {}
        }
    }
#endif
