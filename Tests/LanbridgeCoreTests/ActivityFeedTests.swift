import Foundation
import LanbridgeCore
import LanbridgeProtocol
import Testing

/// Issue 52 §3: the feed is a bounded ring, oldest out first, read by sequence number and filters.
struct ActivityFeedTests {
    func record(_ feed: inout ActivityFeed, _ command: String, node: String = "AAAA-BBBB-CCCC-DDDD", name: String = "Ada's phone", outcome: String = "ok") {
        feed.append(time: Date(), nodeId: node, name: name, command: command, asker: "gateway", outcome: outcome, durationMs: 3, resultBytes: 10)
    }

    @Test func theRingKeepsTheNewestAndNumbersThemForFollowers() {
        var feed = ActivityFeed(capacity: 3)
        for i in 1...5 { record(&feed, "canvas.c\(i)") }
        #expect(feed.count == 3)
        #expect(feed.records().map(\.command) == ["canvas.c3", "canvas.c4", "canvas.c5"], "oldest out first, read oldest first")
        #expect(feed.records().map(\.seq) == [3, 4, 5])
        #expect(feed.records(since: 4).map(\.seq) == [5], "a follower asks for what came after")
        #expect(feed.records(limit: 1).map(\.seq) == [5], "the newest when limited")
    }

    @Test func filtersByNodeIDOrNameAndByCommandPattern() throws {
        var feed = ActivityFeed(capacity: 10)
        record(&feed, "camera.snap")
        record(&feed, "camera.snap", node: "EEEE-FFFF-GGGG-HHHH", name: "Kitchen Pi", outcome: "FORBIDDEN")
        record(&feed, "canvas.present")
        #expect(feed.records(node: "kitchen pi").map(\.outcome) == ["FORBIDDEN"], "names compare as the CLI compares them")
        #expect(feed.records(node: "AAAA-BBBB-CCCC-DDDD").count == 2)
        #expect(feed.records(command: try CommandPattern("camera.*")).count == 2)
    }
}
