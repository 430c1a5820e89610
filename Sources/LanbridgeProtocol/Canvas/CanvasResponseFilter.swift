/// The upstream capability swapped for the node's own wherever the canvas host echoes it (a
/// redirect's `Location`, a page that prints its URL, a live-reload message), so the gateway's
/// capability never reaches the LAN. The two have the same length (both 18 random bytes in
/// base64url), so the swap changes no `Content-Length` and no frame's length; if they ever
/// differ, whatever names the upstream capability is cut instead.
public struct CapabilitySwap: Sendable {
    let needle: [UInt8]
    let replacement: [UInt8]

    /// `upstream` nil: nothing to swap (a §12 canvas host has no capability).
    public init(upstream: String?, replacement: String) {
        needle = Array((upstream ?? "").utf8)
        self.replacement = Array(replacement.utf8)
    }

    public var isEmpty: Bool { needle.isEmpty }

    /// Replaces every whole match; false if one is found and cannot be replaced.
    public func apply(_ bytes: inout [UInt8]) -> Bool {
        guard !needle.isEmpty, bytes.count >= needle.count else { return true }
        var i = 0
        let first = needle[0]
        while i <= bytes.count - needle.count {
            if bytes[i] == first, bytes[i..<(i + needle.count)].elementsEqual(needle) {
                guard replacement.count == needle.count else { return false }
                bytes.replaceSubrange(i..<(i + needle.count), with: replacement)
                i += needle.count
            } else {
                i += 1
            }
        }
        return true
    }

    /// `bytes` swapped, or nil when they hold a capability that cannot be.
    public func applied(_ bytes: [UInt8]) -> [UInt8]? {
        var out = bytes
        return apply(&out) ? out : nil
    }
}

/// A response body on its way to the LAN, as a stream: counted against the response limit, and
/// swapped (`CapabilitySwap`). A match may straddle two reads, so a read's tail that could begin
/// one (it equals the start of the capability) waits for the next read (or `finish`); anything
/// else goes at once. It sees the body only, de-chunked (`CanvasResponseReader`): framing between
/// two halves of a capability would hide it from a filter of the raw bytes.
public struct CanvasResponseFilter: Sendable {
    public enum Outcome: Equatable, Sendable {
        case pass([UInt8])
        /// Stop: the response is over the limit, or would leak the upstream capability.
        case cut(reason: String)
    }

    private let swap: CapabilitySwap
    private let maxBytes: Int
    private var held: [UInt8] = []
    public private(set) var total = 0

    public init(upstream: String?, replacement: String, maxBytes: Int) {
        swap = CapabilitySwap(upstream: upstream, replacement: replacement)
        self.maxBytes = maxBytes
    }

    /// Whether bytes can go on as they came, with no copy: nothing to swap, or nothing held back
    /// and not one byte of them that could start the capability. Counted against the limit.
    public mutating func passesUnchanged(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard held.isEmpty, total + bytes.count <= maxBytes else { return false }
        guard swap.isEmpty || !bytes.contains(swap.needle[0]) else { return false }
        total += bytes.count
        return true
    }

    public mutating func pass(_ bytes: [UInt8]) -> Outcome {
        total += bytes.count
        guard total <= maxBytes else { return .cut(reason: "canvasMaxResponseBytes") }
        guard !swap.isEmpty else { return .pass(bytes) }
        var window = held
        window.append(contentsOf: bytes)
        guard swap.apply(&window) else { return .cut(reason: "upstream_capability") }
        let keep = Self.partialMatch(window, swap.needle)
        held = Array(window[(window.count - keep)...])
        window.removeLast(keep)
        return .pass(window)
    }

    /// The bytes still held back, at the end of the response.
    public mutating func finish() -> [UInt8] {
        defer { held = [] }
        return held
    }

    /// The longest tail of `window` (shorter than `needle`) that is a start of `needle`.
    static func partialMatch(_ window: [UInt8], _ needle: [UInt8]) -> Int {
        var k = min(needle.count - 1, window.count)
        while k > 0 {
            if window[(window.count - k)...].elementsEqual(needle[..<k]) { return k }
            k -= 1
        }
        return 0
    }
}
