import LanbridgeProtocol

/// What the bridge does with a command for a node, decided before anything is sent to it.
public enum AccessDecision: Equatable, Sendable {
    case allow
    /// Allowed once the operator says yes (`nodes ask`): the ask rule that matched, as written.
    case ask(String)
    case deny(DenyReason)
    /// The node is in the background and the command needs the foreground: fail now, retry later.
    case backgroundUnavailable(retryAfterMs: Int)

    public enum DenyReason: Equatable, Sendable, CustomStringConvertible {
        /// The operator's allowlist for this node has no matching pattern.
        case notAllowlisted
        /// A deny rule of this node matches (it wins over any allow rule): the rule, as written.
        case deniedByRule(String)
        /// The node never said it has this command.
        case notDeclared
        /// The node's capability flags rule it out (e.g. input injection).
        case capability(String)
        /// A canvas URL the URL policy refuses (CanvasURLPolicy): why.
        case canvasURL(String)

        /// Stable, for `details.reason` (PROTOCOL.md §12.6).
        public var code: String {
            switch self {
            // The same code as before deny rules were named: callers key on it (details.denyRule says which).
            case .notAllowlisted, .deniedByRule: "NOT_ALLOWLISTED"
            case .notDeclared: "NOT_DECLARED"
            case .capability: "CAPABILITY"
            case .canvasURL: "CANVAS_URL"
            }
        }

        public var description: String {
            switch self {
            case .notAllowlisted: "command is not in this node's allowlist"
            case let .deniedByRule(rule): "this node's deny rule \(rule) matches it"
            case .notDeclared: "the node did not declare this command"
            case let .capability(why): why
            case let .canvasURL(why): why
            }
        }
    }
}

/// Deny by default: a command runs only when the node's allowlist matches it AND the node declared
/// it, its capability flags do not rule it out, and (for foreground commands, on a node whose flags
/// say `requiresForeground`) the app is in front.
/// What a node claims is never enough on its own.
public struct AccessPolicy: Sendable, Equatable {
    /// Commands that need the app in the foreground.
    public var foregroundCommands: [CommandPattern]
    /// Commands that inject input, refused to nodes that say they cannot.
    public var inputCommands: [CommandPattern]
    public var backgroundRetryAfterMs: Int

    public init(
        foregroundCommands: [CommandPattern] = Self.defaultForeground,
        inputCommands: [CommandPattern] = Self.defaultInput, backgroundRetryAfterMs: Int = Limit.backgroundRetryAfterMs.defaultValue
    ) {
        self.foregroundCommands = foregroundCommands
        self.inputCommands = inputCommands
        self.backgroundRetryAfterMs = backgroundRetryAfterMs
    }

    public static let defaultForeground = CommandPattern.foregroundByDefault
    public static let defaultInput = ["input.*", "screen.tap", "screen.type"].map { try! CommandPattern($0) }

    public func decide(_ command: String, rules: AccessRules, declared: [String], flags: CapabilityFlags, foreground: Bool) -> AccessDecision {
        decide(command, rules: CompiledRules(rules), declared: declared, flags: flags, foreground: foreground)
    }

    /// The same, with the node's patterns parsed once (the daemon keeps them per node).
    public func decide(_ command: String, rules: CompiledRules, declared: [String], flags: CapabilityFlags, foreground: Bool) -> AccessDecision {
        if let rule = rules.denyingRule(command) { return .deny(.deniedByRule(rule)) }
        // Deny wins over ask, ask over allow; an asked command still meets every other check
        // first, so the operator is never asked about one that could not run.
        let asking = rules.askingRule(command)
        guard asking != nil || rules.allows(command) else { return .deny(.notAllowlisted) }
        guard declared.contains(where: { CommandPattern.same($0, command) }) else { return .deny(.notDeclared) }
        if !flags.supportsInputInjection, inputCommands.contains(where: { $0.matches(command) }) {
            return .deny(.capability("the node cannot inject input"))
        }
        // A node that says its drawing and capture work from the background is taken at its word
        // here: the flag can only spare a fast-fail, never grant access.
        if !foreground, flags.requiresForeground, foregroundCommands.contains(where: { $0.matches(command) }) {
            return .backgroundUnavailable(retryAfterMs: backgroundRetryAfterMs)
        }
        return asking.map(AccessDecision.ask) ?? .allow
    }
}

/// A node's access rules, parsed. Rules name commands (`canvas.*`) or, for what its canvas may
/// load, origins (`https://example.com`: they have "://", commands cannot). A rule that does not
/// parse (a hand-edited paired.json) allows nothing and, in `deny`, denies everything of its kind:
/// broken rules fail closed.
public struct CompiledRules: Sendable {
    public let allow: [CommandPattern]
    public let deny: [CommandPattern]
    /// The deny rules as written, beside `deny` (a broken one is named as it was written).
    public let denyWritten: [String]
    /// Commands the operator is asked about; a broken ask rule asks about everything (fails closed).
    public let ask: [CommandPattern]
    public let askWritten: [String]
    /// The node's own origin rules (CanvasURLPolicy); a broken deny origin denies every origin.
    public let origins: CanvasURLPolicy
    public let originsBroken: Bool

    public init(_ rules: AccessRules) {
        allow = rules.allow.filter { !OriginPattern.isOrigin($0) }.compactMap { try? CommandPattern($0) }
        denyWritten = rules.deny.filter { !OriginPattern.isOrigin($0) }
        deny = denyWritten.map { (try? CommandPattern($0)) ?? CommandPattern.everything }
        askWritten = rules.ask
        ask = askWritten.map { (try? CommandPattern($0)) ?? CommandPattern.everything }
        let denyOrigins = rules.deny.filter(OriginPattern.isOrigin)
        origins = CanvasURLPolicy(
            allow: rules.allow.filter(OriginPattern.isOrigin).compactMap { try? OriginPattern($0) },
            deny: denyOrigins.compactMap { try? OriginPattern($0) })
        originsBroken = origins.deny.count != denyOrigins.count
    }
}
