/// What comes back from the canvas host, on its way to the LAN: counted against the response
/// limit, and with the upstream capability swapped for the node's own wherever the host echoes
/// it (a redirect's `Location`, a page that prints its URL), so the gateway's capability never
/// reaches the LAN. The two capabilities have the same length (both 18 random bytes in
/// base64url), so the swap changes no `Content-Length` and no WebSocket frame's length; if they
/// ever differ, a response that names the upstream capability is cut instead.
///
/// Streaming: a match may straddle two reads, so a read's tail that could begin one (it equals
/// the start of the capability) waits for the next read (or `finish`); anything else goes at
/// once, so an interactive stream (a WebSocket's 101, a reload) is never held back.
struct CanvasResponseFilter {
    enum Outcome: Equatable {
        case pass([UInt8])
        /// Stop: the response is over the limit, or would leak the upstream capability.
        case cut(reason: String)
    }

    private let needle: [UInt8]
    private let replacement: [UInt8]
    private let maxBytes: Int
    private var held: [UInt8] = []
    private(set) var total = 0

    /// `upstream` nil: nothing to swap (a §12 canvas host has no capability).
    init(upstream: String?, replacement: String, maxBytes: Int) {
        needle = Array((upstream ?? "").utf8)
        self.replacement = Array(replacement.utf8)
        self.maxBytes = maxBytes
    }

    /// Whether a read can go on as it came, with no copy: nothing to swap, or nothing held back
    /// and not one byte of it that could start the capability. Counted against the limit.
    mutating func passesUnchanged(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard held.isEmpty, total + bytes.count <= maxBytes else { return false }
        guard needle.isEmpty || !bytes.contains(needle[0]) else { return false }
        total += bytes.count
        return true
    }

    mutating func pass(_ bytes: [UInt8]) -> Outcome {
        total += bytes.count
        guard total <= maxBytes else { return .cut(reason: "canvasMaxResponseBytes") }
        guard !needle.isEmpty else { return .pass(bytes) }
        var window = held
        window.append(contentsOf: bytes)
        guard swap(&window) else { return .cut(reason: "upstream_capability") }
        let keep = Self.partialMatch(window, needle)
        held = Array(window[(window.count - keep)...])
        window.removeLast(keep)
        return .pass(window)
    }

    /// The bytes still held back, at the end of the response.
    mutating func finish() -> [UInt8] {
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

    /// Replaces every whole match in place; false if one is found and cannot be replaced.
    private func swap(_ window: inout [UInt8]) -> Bool {
        guard window.count >= needle.count else { return true }
        var i = 0
        let first = needle[0]
        while i <= window.count - needle.count {
            if window[i] == first, window[i..<(i + needle.count)].elementsEqual(needle) {
                guard replacement.count == needle.count else { return false }
                window.replaceSubrange(i..<(i + needle.count), with: replacement)
                i += needle.count
            } else {
                i += 1
            }
        }
        return true
    }
}
