import Foundation
import LanbridgeProtocol

extension PairingState {
    /// `nodes allow`: the pattern is allowed, and an identical deny rule goes.
    public mutating func allow(_ pattern: String, node reference: String) throws -> PairedNode {
        try editAccess(of: reference) { rules in
            rules.deny.removeAll { $0 == pattern }
            if !rules.allow.contains(pattern) { rules.allow.append(pattern) }
        }
    }

    /// `nodes deny`: an identical allow rule goes, and a deny rule is recorded, which wins over any
    /// wildcard that would still allow it (a glob cannot be subtracted from).
    public mutating func deny(_ pattern: String, node reference: String) throws -> PairedNode {
        try editAccess(of: reference) { rules in
            rules.allow.removeAll { $0 == pattern }
            if !rules.deny.contains(pattern) { rules.deny.append(pattern) }
        }
    }

    private mutating func editAccess(of reference: String, _ edit: (inout AccessRules) -> Void) throws -> PairedNode {
        let id = try node(matching: reference).nodeId
        let index = paired.nodes.firstIndex { $0.nodeId == id }!
        edit(&paired.nodes[index].access)
        return paired.nodes[index]
    }
}
