import Foundation
import NIOHTTP1
import Testing
@testable import LanbridgeBridge
@testable import LanbridgeCore
import NIOCore
import NIOEmbedded
import NIOPosix

struct ConsoleRequestTests {
    func post(_ headers: [(String, String)], body: String) -> HTTPRequest {
        HTTPRequest(method: .POST, uri: "/pending/reject", headers: HTTPHeaders([("Host", "127.0.0.1:18791")] + headers), body: Array(body.utf8))
    }

    @Test func aWriteNeedsTheSessionsTokenAndNoForeignOrigin() {
        #expect(ConsoleService.refusesWrite(post([("Origin", "http://127.0.0.1:18791"), ("Sec-Fetch-Site", "same-origin")], body: "csrf=abc&request=x"), csrf: "abc") == nil)
        #expect(ConsoleService.refusesWrite(post([], body: "csrf=abc"), csrf: "abc") == nil)  // curl: no Origin, but the token
        #expect(ConsoleService.refusesWrite(post([("Origin", "http://evil.example")], body: "csrf=abc"), csrf: "abc")?.status == .forbidden)
        #expect(ConsoleService.refusesWrite(post([("Origin", "null")], body: "csrf=abc"), csrf: "abc")?.status == .forbidden)
        // A browser's own form under Referrer-Policy: no-referrer.
        #expect(ConsoleService.refusesWrite(post([("Origin", "null"), ("Sec-Fetch-Site", "same-origin")], body: "csrf=abc"), csrf: "abc") == nil)
        #expect(ConsoleService.refusesWrite(post([("Origin", "null"), ("Sec-Fetch-Site", "same-site")], body: "csrf=abc"), csrf: "abc")?.status == .forbidden)
        #expect(ConsoleService.refusesWrite(post([("Sec-Fetch-Site", "cross-site")], body: "csrf=abc"), csrf: "abc")?.status == .forbidden)
        #expect(ConsoleService.refusesWrite(post([], body: "csrf=abd"), csrf: "abc")?.status == .forbidden)
        #expect(ConsoleService.refusesWrite(post([], body: "request=x"), csrf: "abc")?.status == .forbidden)
    }

    @Test func formsAndQueriesDecodeAsBrowsersEncodeThem() {
        #expect(FormData.decode(Array("a=1&b=x+y%2Bz&c=%E2%9C%93&d&a=2&e=%zz%4".utf8)) == ["a": "2", "b": "x y+z", "c": "✓", "d": "", "e": "%zz%4"])
        let request = HTTPRequest(method: .GET, uri: "/audit?q=pairing%20approved&event=", headers: [:])
        #expect(request.path == "/audit" && request.query == ["q": "pairing approved", "event": ""])
    }

    @Test func theSessionCookieIsFoundAmongOthers() {
        #expect(ConsoleAuth.cookieValue("a=b; lanbridge_session=xyz; c=d") == "xyz")
        #expect(ConsoleAuth.cookieValue("lanbridge_sessionx=1") == nil)
        #expect(ConsoleAuth.cookieValue(nil) == nil)
    }

    @Test func everythingANodeNamesIsEscaped() {
        #expect(HTML.escape("<img src=x onerror=alert(1)> & \"'") == "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;&#39;")
    }
}

struct ConsoleEventsTests {
    /// Event streams are bounded: the seventeenth evicts the oldest (closed), never refused.
    @Test func theOldestStreamIsEvictedPastTheBound() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("console-events-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let events = try ConsoleEvents(directory: directory)
        defer { events.stop() }
        let channels = try (0...ConsoleEvents.maxStreams).map { _ in
            let channel = EmbeddedChannel()
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            return channel
        }
        var closed = Array(repeating: false, count: channels.count)
        for (k, channel) in channels.enumerated() { channel.closeFuture.whenComplete { _ in closed[k] = true } }
        for channel in channels.dropLast() { events.add(HTTPEventSink(channel: channel)) }
        #expect(!closed.contains(true))
        events.add(HTTPEventSink(channel: channels[ConsoleEvents.maxStreams]))
        for channel in channels { channel.embeddedEventLoop.run() }
        #expect(closed == [true] + Array(repeating: false, count: ConsoleEvents.maxStreams))
    }
}

struct EventStreamBackpressureTests {
    /// Issue 36: an event stream whose client stops reading is cut off once the channel is not
    /// writable (what it has not read passed the high water mark), instead of growing the daemon's
    /// memory for as long as it stays connected. While it reads, events go out.
    @Test func aClientThatStopsReadingIsCutOff() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var closed = false
        channel.closeFuture.whenComplete { _ in closed = true }
        let sink = HTTPEventSink(channel: channel)
        sink.send("event: change\ndata: \n\n")
        channel.embeddedEventLoop.run()
        let written = try channel.readOutbound(as: ByteBuffer.self)
        #expect(!closed && written != nil, "a reading client gets the event")
        channel.isWritable = false  // as NIO says once the unread bytes pass the high water mark
        sink.send("event: change\ndata: \n\n")
        channel.embeddedEventLoop.run()
        #expect(closed, "a client that stopped reading is cut off")
    }
}
