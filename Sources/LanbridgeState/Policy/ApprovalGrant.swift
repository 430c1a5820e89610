import FoundationEssentials
import LanbridgeProtocol

/// What an approval (or an invite) grants beyond the platform's everyday defaults: the patterns
/// the operator names (`--allow`), and with `--allow-sensitive`, every sensitive command the node
/// declares. Sensitive commands are granted only this way, on purpose, and recorded as confirmed.
public struct ApprovalGrant: Codable, Equatable, Sendable {
    public var allow: [String]
    public var allowSensitive: Bool
    /// Patterns the node may run once the operator says yes, each time (`--ask`: ask rules).
    public var ask: [String]
    /// "Ask each time" for every sensitive command it declares (`--ask-sensitive`), between
    /// granting them and withholding them (the default).
    public var askSensitive: Bool

    public init(allow: [String] = [], allowSensitive: Bool = false, ask: [String] = [], askSensitive: Bool = false) {
        (self.allow, self.allowSensitive, self.ask, self.askSensitive) = (allow, allowSensitive, ask, askSensitive)
    }

    // Invites written before 0.10.0 have no ask fields; unused, they are left out (the shape 0.9.0 reads).
    private enum CodingKeys: String, CodingKey { case allow, allowSensitive, ask, askSensitive }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allow = try c.decode([String].self, forKey: .allow)
        allowSensitive = try c.decode(Bool.self, forKey: .allowSensitive)
        ask = try c.decodeIfPresent([String].self, forKey: .ask) ?? []
        askSensitive = try c.decodeIfPresent(Bool.self, forKey: .askSensitive) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allow, forKey: .allow)
        try c.encode(allowSensitive, forKey: .allowSensitive)
        if !ask.isEmpty { try c.encode(ask, forKey: .ask) }
        if askSensitive { try c.encode(askSensitive, forKey: .askSensitive) }
    }

    /// The node's rules: `defaults` (the platform's, with the config's changes), then the grant.
    /// A sensitive pattern in `defaults` came from the operator's config file: it counts as confirmed.
    public func rules(defaults: AccessRules, declared: [String]) -> AccessRules {
        var rules = defaults
        rules.confirmed = rules.allow.filter { CommandCatalog.isSensitive(pattern: $0) }
        for pattern in allow { rules.grant(pattern) }
        if allowSensitive { rules.take(sensitiveIn: declared, .grant) }
        for pattern in ask where !rules.ask.contains(pattern) { rules.ask.append(pattern) }
        if askSensitive { rules.take(sensitiveIn: declared, .ask) }
        return rules
    }

    /// What a node declared and may not run, and why: shown at approval with the line that grants it.
    public struct Withheld: Codable, Equatable, Sendable {
        public var command: String
        public var sensitive: Bool
        public var reason: String
    }

    public static func withheld(_ rules: AccessRules, declared: [String]) -> [Withheld] {
        let compiled = CompiledRules(rules)
        return declared.filter { !compiled.allows($0) && compiled.askingRule($0) == nil }.map { command in
            if let why = CommandCatalog.sensitivity(of: command) {
                Withheld(command: command, sensitive: true, reason: "sensitive: \(why.rawValue); granted only on purpose")
            } else if compiled.deny.contains(where: { $0.matches(command) }) {
                Withheld(command: command, sensitive: false, reason: "denied by a rule")
            } else {
                Withheld(command: command, sensitive: false, reason: "not in this platform's defaults")
            }
        }
    }
}

extension CompiledRules {
    /// The rules alone (not the node's declaration or state): an allow pattern matches, no deny does.
    public func allows(_ command: String) -> Bool {
        allow.contains(where: { $0.matches(command) }) && !deny.contains(where: { $0.matches(command) })
    }

    /// The first deny rule that matches `command`, as written.
    public func denyingRule(_ command: String) -> String? {
        deny.firstIndex(where: { $0.matches(command) }).map { denyWritten[$0] }
    }

    /// The first ask rule that matches `command`, as written.
    public func askingRule(_ command: String) -> String? {
        ask.firstIndex(where: { $0.matches(command) }).map { askWritten[$0] }
    }
}
