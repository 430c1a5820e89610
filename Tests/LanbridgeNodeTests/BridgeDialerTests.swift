@testable import LanbridgeNode
import LanbridgeProtocol
import Testing

/// The race a node runs over the addresses it knows (issue 25): staggered starts, the next one at
/// once after a failure, the first success wins, and a success that comes late is closed.
@Suite(.timeLimit(.minutes(1)))
struct BridgeDialerTests {
    let addresses = ["10.0.0.1:1", "100.64.0.1:1", "10.0.0.3:1"].compactMap { ReachableAddress($0, defaultPort: 0) }
    struct Refused: Error {}

    @Test func candidatesComeInOrderWithoutRepeats() {
        let (a, b, c, d) = (addresses[0], addresses[1], addresses[2], ReachableAddress(host: "10.0.0.4", port: 1))
        #expect(BridgeDialer.candidates(discovered: [c], last: a, configured: [b, a], learned: [a, b, c, d]) == [c, a, b, d])
    }

    @Test func aFailureStartsTheNextAttemptWithoutWaitingForTheStagger() async throws {
        // An hour's stagger: only the failure can start the second attempt before the time limit.
        let (winner, address) = try await BridgeDialer.race(
            addresses, stagger: .seconds(3600),
            attempt: { address in
                if address == addresses[0] { throw Refused() }
                return address.host
            }, discard: { _ in })
        #expect(winner == "100.64.0.1" && address == addresses[1])
    }

    @Test func aSilentAddressIsOvertakenAndWhatItReturnsLateIsDiscarded() async throws {
        let (release, released) = AsyncStream.makeStream(of: Void.self)
        let (discards, discarded) = AsyncStream.makeStream(of: String.self)
        let (winner, _) = try await BridgeDialer.race(
            addresses, stagger: .milliseconds(1),
            attempt: { address in
                if address == addresses[0] {
                    for await _ in release { break }  // deaf to cancellation, as a connect in progress is
                    return "late"
                }
                return address.host
            }, discard: { discarded.yield($0) })
        #expect(winner == "100.64.0.1")
        released.yield()
        var iterator = discards.makeAsyncIterator()
        #expect(await iterator.next() == "late", "the late connection is handed back to be closed")
    }

    @Test func whenEveryAttemptFailsEachFailureIsReported() async throws {
        do {
            _ = try await BridgeDialer.race(addresses, stagger: .seconds(3600), attempt: { _ -> Int in throw Refused() }, discard: { _ in })
            Issue.record("expected a failure")
        } catch let failed as BridgeDialer.AllFailed {
            #expect(Set(failed.failures.map(\.address)) == Set(addresses))
        }
    }
}
