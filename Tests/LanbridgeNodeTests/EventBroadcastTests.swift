@testable import LanbridgeNode
import Testing

/// `NodeClient.events`: any number of consumers, each bounded, none holding up another.
struct EventBroadcastTests {
    @Test func everySubscriberSeesEveryEventFromWhenItSubscribed() async {
        let broadcast = EventBroadcast<Int>(bufferSize: 8)
        let first = broadcast.subscribe()
        broadcast.yield(1)
        let second = broadcast.subscribe()
        broadcast.yield(2)
        broadcast.finish()
        #expect(await Array(first) == [1, 2])
        #expect(await Array(second) == [2])
    }

    @Test func aSlowSubscriberLosesItsOwnOldestEventsOnly() async {
        let broadcast = EventBroadcast<Int>(bufferSize: 3)
        let slow = broadcast.subscribe()
        let fast = broadcast.subscribe()
        var collected: [Int] = []
        var iterator = fast.makeAsyncIterator()
        for n in 1...10 {
            broadcast.yield(n)
            if let next = await iterator.next() { collected.append(next) }
        }
        broadcast.finish()
        #expect(collected == Array(1...10))
        #expect(await Array(slow) == [8, 9, 10])
    }

    @Test func aSubscriberThatGoesAwayIsForgotten() async {
        let broadcast = EventBroadcast<Int>(bufferSize: 4)
        do {
            var iterator = broadcast.subscribe().makeAsyncIterator()
            broadcast.yield(1)
            _ = await iterator.next()
        }
        broadcast.yield(2)  // nobody left: nothing kept
        #expect(broadcast.subscriberCount == 0)
    }
}

extension Array {
    fileprivate init(_ stream: AsyncStream<Element>) async {
        self = []
        for await element in stream { append(element) }
    }
}
