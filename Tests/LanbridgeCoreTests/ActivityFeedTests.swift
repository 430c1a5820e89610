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

    /// `limits.activityRecords: 0`: nothing is kept, and reading and counting an empty ring is safe.
    @Test func aFeedThatIsOffKeepsNothing() {
        var feed = ActivityFeed(capacity: 0)
        for i in 1...3 { record(&feed, "canvas.c\(i)") }
        #expect(feed.count == 0 && feed.records().isEmpty && feed.nextSeq == 4)
        let (nodes, coversDay) = feed.counts(at: Date())
        #expect(nodes.isEmpty && coversDay)
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

/// Issue 52 §3: per node, the last hour's and day's invokes, and the ones that did not end ok.
struct ActivityCountsTests {
    @Test func perNodeCountsForTheHourAndTheDay() {
        var feed = ActivityFeed(capacity: 10)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func add(_ node: String, _ ago: TimeInterval, _ outcome: String = "ok") {
            feed.append(time: now - ago, nodeId: node, name: "n-\(node)", command: "camera.snap", asker: "gateway", outcome: outcome, durationMs: 1, resultBytes: 0)
        }
        add("A", 90_000)  // more than a day ago: not counted
        add("A", 7200)
        add("A", 60, "ASKED_DENIED")
        add("B", 30)
        let (nodes, covers) = feed.counts(at: now)
        #expect(covers, "the ring has not overflowed")
        #expect(
            nodes == [
                .init(nodeId: "A", name: "n-A", lastHour: 1, lastDay: 2, notOkLastDay: 1), .init(nodeId: "B", name: "n-B", lastHour: 1, lastDay: 1, notOkLastDay: 0),
            ])
        var small = ActivityFeed(capacity: 2)
        for ago in [100.0, 50, 10] {
            small.append(time: now - ago, nodeId: "A", name: nil, command: "x.y", asker: "gateway", outcome: "ok", durationMs: 0, resultBytes: 0)
        }
        #expect(!small.counts(at: now).coversDay, "overflowed within the day: it says so")
    }
}
