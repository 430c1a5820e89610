/// A fixed-size buffer for secret material (private keys, chaining keys, cipher keys, PSKs).
/// A class, so it is never copied implicitly; wiped (`SecureMemory.wipe`) when released.
public final class SecureBytes: ContiguousByteStorage, @unchecked Sendable {
    // @unchecked: the buffer is written only inside `init`; afterwards it is read-only.
    private let storage: UnsafeMutableRawBufferPointer
    public let count: Int

    /// A zero-filled buffer of `count` bytes, then filled by `initialize`.
    public init(count: Int, initialize: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try initialize(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            SecureMemory.wipe(storage)
            storage.deallocate()
            throw error
        }
        self.storage = storage
        self.count = count
    }

    public convenience init(copying bytes: some ContiguousByteStorage) {
        let n = bytes.withUnsafeBytes { $0.count }
        self.init(count: n) { dst in
            bytes.withUnsafeBytes { src in dst.copyMemory(from: src) }
        }
    }

    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { Backend.randomBytes(into: $0) }
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// The same bytes without leading and trailing ASCII whitespace (a token file's newline).
    public func trimmingWhitespace() -> SecureBytes {
        withUnsafeBytes { bytes in
            let space: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
            let start = bytes.firstIndex { !space.contains($0) } ?? bytes.count
            let end = (bytes.lastIndex { !space.contains($0) } ?? -1) + 1
            return SecureBytes(count: max(0, end - start)) { out in
                if end > start { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
            }
        }
    }

    deinit {
        SecureMemory.wipe(storage)
        storage.deallocate()
    }
}
