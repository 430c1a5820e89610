@testable import LanbridgeCore
import Testing
import TestSupport

/// Issue 48 §3: one descriptor budget for every listener, degrading by eviction.
struct DescriptorLedgerTests {
    @Test func pastTheBudgetTheBusiestPeersOldestUnprovenConnectionGoes() {
        var ledger = DescriptorLedger(capacity: 6)
        guard case let .admit(node, []) = ledger.admit(peer: "10.0.0.2") else { Issue.record("the node"); return }
        ledger.prove(node)
        var flood: [Int] = []
        for _ in 0..<4 {
            guard case let .admit(id, []) = ledger.admit(peer: "10.0.0.66") else { Issue.record("the flood"); return }
            flood.append(id)
        }
        guard case let .admit(other, []) = ledger.admit(peer: "10.0.0.3") else { Issue.record("a bystander"); return }
        // Full: the flooder's oldest goes, not the bystander's, never the paired node's.
        #expect(ledger.admit(peer: "10.0.0.3") == .admit(other + 1, evicting: [flood[0]]))
        #expect(ledger.used == 6 && ledger.count == 6)
        // A canvas connection costs two (its upstream): two of the flooder's go.
        #expect(ledger.admit(peer: "10.0.0.4", cost: 2) == .admit(other + 2, evicting: [flood[1], flood[2]]))
        #expect(ledger.used == 6)
    }

    @Test func whenProvenConnectionsHoldItAllTheNewcomerIsRefusedAndNothingIsEvicted() {
        var ledger = DescriptorLedger(capacity: 3)
        for peer in ["a", "b"] {
            guard case let .admit(id, _) = ledger.admit(peer: peer) else { return }
            ledger.prove(id)
        }
        guard case let .admit(unproven, _) = ledger.admit(peer: "c") else { return }
        // Two would be needed and only one is unproven: refused, and c keeps its connection.
        #expect(ledger.admit(peer: "d", cost: 2) == .refuse)
        #expect(ledger.used == 3 && !ledger.isProven(unproven))
        ledger.prove(unproven)
        #expect(ledger.admit(peer: "d") == .refuse)
        ledger.release(unproven)
        #expect(ledger.admit(peer: "d") == .admit(unproven + 1, evicting: []))
    }

    @Test func everyPeerHoldingOneTheOldestGoesAndTheBooksBalance() {
        var ledger = DescriptorLedger(capacity: 100)
        var rng = SplitMix(state: 48)
        var live: [Int: Bool] = [:]  // id -> proven
        for step in 0..<20_000 {
            switch UInt8.random(in: 0...9, using: &rng) {
            case 0...5:
                // Many peers with one each (a flood from many addresses), a few busy ones.
                let peer = Bool.random(using: &rng) ? "p\(step)" : "busy\(Int.random(in: 0..<3, using: &rng))"
                let before = Dictionary(uniqueKeysWithValues: live.filter { !$0.value }.map { ($0.key, $0.value) })
                switch ledger.admit(peer: peer, cost: Int.random(in: 1...2, using: &rng)) {
                case let .admit(id, evicting):
                    for victim in evicting {
                        #expect(before[victim] != nil, "only unproven connections are evicted")
                        live[victim] = nil
                    }
                    live[id] = false
                case .refuse:
                    break
                }
            case 6...7:
                if let id = live.keys.randomElement(using: &rng) { ledger.prove(id); live[id] = true }
            default:
                if let id = live.keys.randomElement(using: &rng) { ledger.release(id); live[id] = nil }
            }
            #expect(ledger.used <= ledger.capacity && ledger.count == live.count)
            #expect(ledger.unprovenCount == live.values.filter { !$0 }.count)
        }
    }

    /// Issue 53 §5: connections that come, prove themselves or not, and go, with room to spare
    /// (nothing ever evicted): the eviction queue keeps what is unproven now, not an ID for every
    /// connection ever accepted (it grew 8 bytes a connection, found by heaptrack under churn).
    @Test func theEvictionQueueDoesNotGrowWithConnectionsThatLeft() {
        var ledger = DescriptorLedger(capacity: 100_000)
        var waiting: [Int] = []
        for n in 0..<50_000 {
            guard case let .admit(id, _) = ledger.admit(peer: "10.0.\(n % 200).1") else { Issue.record("refused"); return }
            if n % 3 == 0 { ledger.prove(id) }
            if n % 7 == 0 { waiting.append(id) } else { ledger.release(id) }
        }
        #expect(ledger.count == waiting.count)
        #expect(ledger.queued <= 2 * ledger.unprovenCount + 1025, "\(ledger.queued) queued for \(ledger.unprovenCount) unproven")
        // And eviction still takes the oldest unproven first.
        var full = DescriptorLedger(capacity: 3)
        guard case let .admit(first, _) = full.admit(peer: "a"), case .admit = full.admit(peer: "b"), case .admit = full.admit(peer: "c") else { return }
        guard case let .admit(_, evicting) = full.admit(peer: "d") else { Issue.record("refused"); return }
        #expect(evicting == [first])
    }
}
