@testable import LanbridgeBridge
@testable import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Testing

/// Issue 37 §1: the canvas relay's decisions, sans I/O.
struct CanvasRequestTests {
    static let cap = "kWz4f-t5Z7fK2_YHJIBfbqFZ"

    func read(_ head: String) -> Result<CanvasRequest, CanvasRequest.Refusal> {
        Result { () throws(CanvasRequest.Refusal) in try CanvasRequest(head: Array(head.utf8)) }
    }

    @Test func aPageLoadIsReadAndRebuiltWithOnlyTheHeadersItNeeds() throws {
        let head =
            "GET /__openclaw__/cap/\(Self.cap)/__openclaw__/a2ui/?platform=ios HTTP/1.1\r\nHost: 192.168.1.10:18793\r\n"
            + "Accept: text/html\r\nCookie: lanbridge_session=x\r\nAuthorization: Bearer t\r\nForwarded: for=1.2.3.4\r\nX-Forwarded-For: 1.2.3.4\r\n"
            + "Accept-Encoding: gzip\r\nConnection: keep-alive, x-secret\r\nX-Secret: 1\r\n\r\n"
        let request = try read(head).get()
        #expect(request.capability == Self.cap && request.path == "/__openclaw__/a2ui/" && request.query == "platform=ios" && !request.upgrade)
        let upstream = request.upstreamHead(host: "127.0.0.1:18789", upstreamCapability: "UPSTREAMxxxxxxxxxxxxxxxx")
        #expect(upstream.hasPrefix("GET /__openclaw__/cap/UPSTREAMxxxxxxxxxxxxxxxx/__openclaw__/a2ui/?platform=ios HTTP/1.1\r\nHost: 127.0.0.1:18789\r\n"))
        for gone in ["Cookie", "cookie", "uthorization", "orwarded", "gzip", "x-secret", "192.168.1.10", Self.cap] {
            #expect(!upstream.contains(gone), "\(gone) reached upstream: \(upstream)")
        }
        #expect(upstream.contains("accept: text/html\r\n") && upstream.hasSuffix("Connection: close\r\nAccept-Encoding: identity\r\n\r\n"))
        // §12: no upstream capability, the path as it is.
        #expect(request.upstreamHead(host: "localhost", upstreamCapability: nil).hasPrefix("GET /__openclaw__/a2ui/?platform=ios HTTP/1.1\r\n"))
    }

    @Test func theLiveReloadUpgradeTakesItsCapabilityFromTheQuery() throws {
        let head =
            "GET /__openclaw__/ws?oc_cap=\(Self.cap) HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: https://evil.example\r\n"
            + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"
        let request = try read(head).get()
        #expect(request.upgrade && request.capability == Self.cap && request.query.isEmpty)
        let upstream = request.upstreamHead(host: "127.0.0.1:1", upstreamCapability: "U")
        #expect(upstream.hasPrefix("GET /__openclaw__/cap/U/__openclaw__/ws HTTP/1.1\r\n") && upstream.contains("sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"))
        #expect(upstream.contains("Upgrade: websocket") && !upstream.contains("evil.example"))
        // Uncompressed, so the filter can read what comes back.
        #expect(!upstream.contains("permessage-deflate"))
    }

    @Test(arguments: [
        ("GET /__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n\r\n", "no_capability"),
        ("GET /__openclaw__/cap/\(cap)/v1/models HTTP/1.1\r\nHost: h\r\n\r\n", "path"),
        ("GET /__openclaw__/cap/\(cap)/ HTTP/1.1\r\nHost: h\r\n\r\n", "path"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2uix HTTP/1.1\r\nHost: h\r\n\r\n", "path"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/../x HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/%2e%2e/x HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/%2E%2e%2Fx HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/%252e%252e/x HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/a%5cb HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/a\\b HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/canvas//x HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/%00 HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/%zz HTTP/1.1\r\nHost: h\r\n\r\n", "bad_escape"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/ws HTTP/1.1\r\nHost: h\r\n\r\n", "path"),
        ("POST /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n\r\n", "method"),
        ("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", "method"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", "body"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", "body"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n", "host"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\n\r\n", "host"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", "bad_header"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", "bad_header"),
        ("GET http://h/__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n\r\n", "target"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/ HTTP/2.0\r\nHost: h\r\n\r\n", "bad_request_line"),
        ("GET /__openclaw__/cap/a%2Fb/__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/?oc_cap=other HTTP/1.1\r\nHost: h\r\n\r\n", "capability"),
        ("GET /__openclaw__/cap//__openclaw__/a2ui/ HTTP/1.1\r\nHost: h\r\n\r\n", "traversal"),
        // Found by the fuzz target: a bare LF in the query would have gone upstream as a line break.
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/?p\nt:latform=ios HTTP/1.1\r\nHost: h\r\n\r\n", "target"),
        ("GET /__openclaw__/cap/\(cap)/__openclaw__/a2ui/?a=\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n", "target"),
    ])
    func everyOtherRequestIsRefusedWithItsReason(head: String, reason: String) {
        #expect(read(head) == .failure(CanvasRequest.Refusal(reason: reason)), "\(head.debugDescription)")
    }
}

struct CanvasResponseFilterTests {
    @Test func theUpstreamCapabilityIsSwappedEvenAcrossReadsAndNothingElseWaits() {
        var filter = CanvasResponseFilter(upstream: "UPSTREAM", replacement: "node-cap", maxBytes: 1 << 20)
        // A whole read with no partial match goes at once (a WebSocket's 101 must not wait).
        #expect(filter.pass(Array("HTTP/1.1 101 Switching\r\n\r\n".utf8)) == .pass(Array("HTTP/1.1 101 Switching\r\n\r\n".utf8)))
        // Split inside the capability: held, then swapped whole.
        #expect(filter.pass(Array("Location: /x?oc_cap=UPST".utf8)) == .pass(Array("Location: /x?oc_cap=".utf8)))
        #expect(filter.pass(Array("REAM&y\r\n".utf8)) == .pass(Array("node-cap&y\r\n".utf8)))
        #expect(filter.pass(Array("ends with U".utf8)) == .pass(Array("ends with ".utf8)))
        #expect(filter.finish() == Array("U".utf8))
    }

    @Test func aResponseOverTheLimitIsCutAndADifferentLengthCapabilityIsNeverPassed() {
        var small = CanvasResponseFilter(upstream: nil, replacement: "x", maxBytes: 10)
        #expect(small.pass(Array(repeating: 0x41, count: 10)) == .pass(Array(repeating: 0x41, count: 10)))
        #expect(small.pass([0x41]) == .cut(reason: "canvasMaxResponseBytes"))
        var unequal = CanvasResponseFilter(upstream: "UPSTREAM", replacement: "short", maxBytes: 100)
        #expect(unequal.pass(Array("a UPSTREAM b".utf8)) == .cut(reason: "upstream_capability"))
    }
}
