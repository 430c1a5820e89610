import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import Testing

/// The relay's connection table alone: handles are plain numbers here.
struct CanvasConnectionTableTests {
    let a = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)
    let b = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)

    @Test func aFullTableEvictsTheOldestStrangerAndRefusesOnlyWhenAllAreProven() throws {
        var table = CanvasConnectionTable<String>(total: 3, perNode: 8)
        let first = try #require(table.admit("first").id), second = try #require(table.admit("second").id)
        _ = table.admit("third")
        let secondProven = table.prove(second, node: a).proven
        #expect(secondProven)
        let fourth = table.admit("fourth")
        #expect(fourth.evicted == "first" && fourth.id != nil, "the oldest unproven goes, not a proven one")
        let late = table.prove(first, node: a).proven
        #expect(!late, "an evicted connection cannot prove itself afterwards")
        let fourthID = try #require(fourth.id)
        let fourthProven = table.prove(fourthID, node: b).proven
        #expect(fourthProven)
        let fifth = table.admit("fifth")
        #expect(fifth.evicted == "third" && table.count == 3)
        let fifthID = try #require(fifth.id)
        let fifthProven = table.prove(fifthID, node: b).proven
        #expect(fifthProven)
        let refused = table.admit("sixth")
        #expect(refused.id == nil && refused.evicted == nil && table.count == 3, "every slot proven: refused, nothing evicted")
    }

    @Test func aNodeHoldsAtMostItsBoundAndARevokeReturnsAllOfIt() throws {
        var table = CanvasConnectionTable<Int>(total: 16, perNode: 2)
        let ids = (0..<3).compactMap { table.admit($0).id }
        let proven = (table.prove(ids[0], node: a).proven, table.prove(ids[1], node: a).proven, table.prove(ids[2], node: a).proven)
        #expect(proven.0 && proven.1 && !proven.2, "the third is over the node's bound")
        let nine = try #require(table.admit(9).id)
        let other = table.prove(nine, node: b).proven
        #expect(other)
        let revoked = table.revoke(a), again = table.revoke(a)
        #expect(Set(revoked) == [0, 1])
        #expect(again.isEmpty && table.count == 1, "the other node's stays")
        table.closed(ids[2], node: nil)
        #expect(table.all == [9])
    }

    /// Issue 53 §1: a kept connection between two requests holds its slot but is the first to make
    /// way, in all and within its node's bound; busy again, it is not; and it serves one node only.
    @Test func aRestingConnectionMakesWayAndServesItsOwnNodeOnly() throws {
        var table = CanvasConnectionTable<String>(total: 2, perNode: 2)
        let kept = try #require(table.admit("kept").id), busy = try #require(table.admit("busy").id)
        let provenKept = table.prove(kept, node: a).proven, provenBusy = table.prove(busy, node: b).proven
        #expect(provenKept && provenBusy)
        let refused = table.admit("refused")
        #expect(refused.id == nil, "every slot busy: refused")
        let rested = table.rest(kept, node: a)
        #expect(rested)
        let newcomer = table.admit("newcomer")
        #expect(newcomer.evicted == "kept" && newcomer.id != nil, "the resting one makes way for a new connection")
        let resumed = table.resume(kept, node: a)
        #expect(!resumed, "evicted, it cannot take another request")

        var bound = CanvasConnectionTable<String>(total: 8, perNode: 1)
        let first = try #require(bound.admit("first").id), second = try #require(bound.admit("second").id)
        let firstProven = bound.prove(first, node: a).proven, secondProven = bound.prove(second, node: a).proven
        #expect(firstProven && !secondProven, "at the node's bound with none resting: refused")
        let third = try #require(bound.admit("third").id)
        let firstRests = bound.rest(first, node: a), otherNode = bound.resume(first, node: b)
        #expect(firstRests && !otherNode, "a kept connection serves the node it was proven for")
        let proven = bound.prove(third, node: a)
        #expect(proven.proven && proven.evicted == "first", "the node's own resting connection makes way")
        let thirdRests = bound.rest(third, node: a), thirdResumes = bound.resume(third, node: a)
        #expect(thirdRests && thirdResumes, "resting, then busy again")
        let fourth = try #require(bound.admit("fourth").id)
        let fourthProven = bound.prove(fourth, node: a).proven
        #expect(!fourthProven, "busy again, it is not evicted")
    }
}
