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

    /// `nodes allow|deny --remove`: takes one rule out, as written; no such rule is an error.
    public mutating func removeRule(_ pattern: String, denying: Bool, node reference: String) throws -> PairedNode {
        let current = try node(matching: reference)
        guard (denying ? current.access.deny : current.access.allow).contains(pattern) else {
            throw PairingError.noSuchRule(pattern, denying ? "deny" : "allow", current.nodeId)
        }
        return try editAccess(of: reference) { rules in
            if denying { rules.deny.removeAll { $0 == pattern } } else { rules.allow.removeAll { $0 == pattern } }
        }
    }

    private mutating func editAccess(of reference: String, _ edit: (inout AccessRules) -> Void) throws -> PairedNode {
        let id = try node(matching: reference).nodeId
        guard let index = paired.nodes.firstIndex(where: { $0.nodeId == id }) else { throw PairingError.unknownNode(reference) }
        edit(&paired.nodes[index].access)
        return paired.nodes[index]
    }
}
