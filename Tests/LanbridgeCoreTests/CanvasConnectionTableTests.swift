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
        let secondProven = table.prove(second, node: a)
        #expect(secondProven)
        let fourth = table.admit("fourth")
        #expect(fourth.evicted == "first" && fourth.id != nil, "the oldest unproven goes, not a proven one")
        let late = table.prove(first, node: a)
        #expect(!late, "an evicted connection cannot prove itself afterwards")
        let fourthID = try #require(fourth.id)
        let fourthProven = table.prove(fourthID, node: b)
        #expect(fourthProven)
        let fifth = table.admit("fifth")
        #expect(fifth.evicted == "third" && table.count == 3)
        let fifthID = try #require(fifth.id)
        let fifthProven = table.prove(fifthID, node: b)
        #expect(fifthProven)
        let refused = table.admit("sixth")
        #expect(refused.id == nil && refused.evicted == nil && table.count == 3, "every slot proven: refused, nothing evicted")
    }

    @Test func aNodeHoldsAtMostItsBoundAndARevokeReturnsAllOfIt() throws {
        var table = CanvasConnectionTable<Int>(total: 16, perNode: 2)
        let ids = (0..<3).compactMap { table.admit($0).id }
        let proven = (table.prove(ids[0], node: a), table.prove(ids[1], node: a), table.prove(ids[2], node: a))
        #expect(proven.0 && proven.1 && !proven.2, "the third is over the node's bound")
        let nine = try #require(table.admit(9).id)
        let other = table.prove(nine, node: b)
        #expect(other)
        let revoked = table.revoke(a), again = table.revoke(a)
        #expect(Set(revoked) == [0, 1])
        #expect(again.isEmpty && table.count == 1, "the other node's stays")
        table.closed(ids[2], node: nil)
        #expect(table.all == [9])
    }
}
