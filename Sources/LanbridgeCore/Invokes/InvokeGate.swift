import LanbridgeProtocol
import LanbridgeState

/// Decides every invoke, from the gateway or the operator alike, before anything crosses the LAN
/// (PROTOCOL.md §12.3). One function, one table of outcomes, checked in this order:
///
/// | check                                        | refusal                                  |
/// |----------------------------------------------|------------------------------------------|
/// | the command is a command name                | INVALID_REQUEST                          |
/// | timeoutMs within 1…maxTimeoutMs              | INVALID_REQUEST                          |
/// | the node is paired                           | NODE_NOT_FOUND                           |
/// | allowlisted, not denied, declared, flags fit | FORBIDDEN, details.reason (audited)      |
/// | a canvas URL the URL policy allows           | FORBIDDEN, CANVAS_URL (audited)          |
/// | hold.maxMs within 1…maxHoldMs                | INVALID_REQUEST                          |
/// | the node is connected                        | NODE_NOT_CONNECTED, retryable (or held)  |
/// | in front, if the command needs it            | BACKGROUND_UNAVAILABLE, retryable (or held) |
/// | fewer than maxConcurrentInvokes in flight    | RATE_LIMITED (concurrentInvokes)         |
/// | the node reads what it is sent               | NODE_BACKLOGGED, retryable (nodeQueueBytes) |
/// | an ask rule matches: the operator said yes   | waits for the answer (`AskedInvokes`)    |
/// | snapshots within snapshotsPerMinute          | RATE_LIMITED (snapshotsPerMinute)        |
///
/// The rules come before connectedness, so a denied command says FORBIDDEN whether or not the
/// node is there; a refused invoke spends no rate token. Results are held to `maxResultBytes`
/// when they come back (`InvokeBook`).
package struct InvokeGate {
    package var limits: BridgeSettings.Limits
    package var policy: AccessPolicy
    /// `limits.snapshotCommands`, parsed once (the config loader has checked them).
    package private(set) var snapshotCommands: [CommandPattern]

    /// What a canvas may load (CanvasURLPolicy), from the config; nodes' own rules come with them.
    package var canvasPolicy: CanvasURLPolicy
    package static let navigations = ["canvas.present", "canvas.navigate"]

    /// Where the node's canvas relay is, and which origins agent URLs use for the canvas host
    /// behind it (those are rewritten to the relay).
    package struct CanvasPlace {
        package var relayBase: String?
        package var upstreamOrigins: [String] = []

        package var relayOrigin: String? { relayBase.flatMap { try? CanvasURL($0).origin } }

        /// The URL on the node's relay, when `url` names the canvas host behind it.
        package func rewrite(_ url: String) -> String? {
            guard let relayBase, !upstreamOrigins.isEmpty, let parsed = try? CanvasURL(url), let origin = parsed.origin,
                upstreamOrigins.contains(where: { (try? CanvasURL($0).origin) == origin }),
                let separator = url.firstRange(of: "://")
            else { return nil }
            var rest = url[separator.upperBound...].drop { !"/?#".contains($0) }
            // The gateway's own capability in the path is the gateway's: the relay puts it back.
            if rest.hasPrefix(CanvasRequest.capabilityPrefix) {
                let afterPrefix = rest.dropFirst(CanvasRequest.capabilityPrefix.count)
                rest = afterPrefix.drop { !"/?#".contains($0) }
            }
            return relayBase + rest
        }
    }

    package init(settings: BridgeSettings) {
        limits = settings.limits
        policy = settings.policy
        canvasPolicy = settings.canvas.urlPolicy
        snapshotCommands = settings.limits.snapshotCommands.compactMap { try? CommandPattern($0) }
    }

    /// The paired node's live session, as far as the gate cares.
    package struct Session {
        package var connection: ConnectionID
        package var foreground: Bool
        package var inFlight: Int
        /// More than `nodeQueueBytes` wait to be written to it (a node that stopped reading).
        package var backlogged = false
    }

    package enum Verdict: Equatable {
        /// `params` as relayed: a canvas URL naming the canvas host points at the node's relay.
        case relay(node: PairedNode, connection: ConnectionID, timeoutMs: Int, params: JSONValue?)
        /// `denied` is set for access-rule refusals, which are audited.
        case refuse(ErrorMessage, denied: AccessDecision.DenyReason?)
        /// The invoke asked to wait (`hold`) and may: the node is away or in the background.
        /// `refusal` is what it would have heard, and hears if holding ends.
        case hold(node: PairedNode, refusal: ErrorMessage)
        /// Everything else passed, and an ask rule matches (`rule`, as written): it runs only once
        /// the operator says yes, and is decided again then.
        case ask(node: PairedNode, rule: String)
    }

    package func decide(
        _ request: InvokeRequest, node: Result<PairedNode, any Error>, rules: CompiledRules?, session: Session?,
        buckets: inout RateBuckets, now: Moment, canvas: CanvasPlace = .init(), approved: Bool = false
    ) -> Verdict {
        let command = request.command
        guard (try? CommandPattern(command)) != nil, !command.hasSuffix("*") else {
            return refuse(ErrorMessage.invalidRequest, "\"\(command)\" is not a command name")
        }
        let timeoutMs = request.timeoutMs ?? limits[.defaultTimeoutMs]
        guard (1...limits[.maxTimeoutMs]).contains(timeoutMs) else {
            return refuse(ErrorMessage.invalidRequest, "timeoutMs must be between 1 and \(limits[.maxTimeoutMs])")
        }
        if let hold = request.holdMs, hold > limits[.maxHoldMs] {
            return refuse(ErrorMessage.invalidRequest, "hold.maxMs must be between 1 and \(limits[.maxHoldMs])")
        }
        let paired: PairedNode
        switch node {
        case let .success(found): paired = found
        case let .failure(error):
            return refuse(ErrorMessage.nodeNotFound, "\(error)", details: ["nodeId": .string(request.node), "command": .string(command)])
        }
        // Built only for a refusal: an allowed invoke allocates none of it.
        var details: JSONValue { ["nodeId": .string(paired.nodeId.description), "command": .string(command)] }
        let name = paired.details.displayName
        // An offline node counts as in front, so the rules decide first.
        let compiled = rules ?? CompiledRules(paired.access)
        var asking: String?
        switch policy.decide(
            command, rules: compiled, declared: paired.details.commands,
            flags: paired.details.flags, foreground: session?.foreground ?? true)
        {
        case .deny(.notAllowlisted):
            // The operator's call, so the refusal names the exact line that grants it.
            let hint = "lanbridge nodes allow \(paired.nodeId) \(command)"
            let sensitive = CommandCatalog.sensitivity(of: command)
            var extra: [String: JSONValue] = ["reason": .string(AccessDecision.DenyReason.notAllowlisted.code), "hint": .string(hint)]
            if sensitive != nil { extra["sensitive"] = true }
            let why = sensitive.map { "; it \($0.rawValue), so it is granted only on purpose" } ?? ""
            return .refuse(
                ErrorMessage(
                    code: ErrorMessage.forbidden, message: "\(command): \(AccessDecision.DenyReason.notAllowlisted)\(why) (\(hint))",
                    details: details.merging(extra), retryable: false), denied: .notAllowlisted)
        case let .deny(.deniedByRule(rule)):
            // The operator wrote this rule: name it, and the line that takes it out.
            let hint = "lanbridge nodes deny \(paired.nodeId) \(rule) --remove"
            let reason = AccessDecision.DenyReason.deniedByRule(rule)
            return .refuse(
                ErrorMessage(
                    code: ErrorMessage.forbidden, message: "\(command): \(reason) (to allow it: \(hint))",
                    details: details.merging(["reason": .string(reason.code), "denyRule": .string(rule), "hint": .string(hint)]), retryable: false),
                denied: reason)
        case let .deny(reason):
            return .refuse(
                ErrorMessage(
                    code: ErrorMessage.forbidden, message: "\(command): \(reason)",
                    details: details.merging(["reason": .string(reason.code)]), retryable: false), denied: reason)
        case let .backgroundUnavailable(retryAfterMs) where session != nil:
            let refusal = ErrorMessage(
                code: ErrorMessage.backgroundUnavailable, message: "\(name) is in the background; \(command) needs the foreground",
                details: details, retryable: true, retryAfterMs: retryAfterMs)
            return request.holdMs == nil ? .refuse(refusal, denied: nil) : .hold(node: paired, refusal: refusal)
        case let .ask(rule):
            asking = rule
        case .allow, .backgroundUnavailable:
            break
        }
        var params = request.params
        if Self.navigations.contains(where: { CommandPattern.same($0, command) }), let urlValue = Self.navigationURL(params) {
            // A type before its content: a policy on strings is bypassed by an array or an object,
            // which a JavaScript node turns into a URL string all the same.
            guard case let .string(url) = urlValue else {
                let reason = "the url is not a string"
                return .refuse(
                    ErrorMessage(
                        code: ErrorMessage.forbidden, message: "\(command): \(reason)",
                        details: details.merging(["reason": .string(AccessDecision.DenyReason.canvasURL(reason).code)]), retryable: false),
                    denied: .canvasURL(reason))
            }
            let target = canvas.rewrite(url) ?? url
            var verdict = canvasPolicy.decide(target, relayOrigin: canvas.relayOrigin, node: compiled.origins)
            if compiled.originsBroken, verdict == .allow, (try? CanvasURL(target).origin) != canvas.relayOrigin, target != "about:blank" {
                verdict = .refuse(reason: "this node's origin rules do not parse (fix them in paired.json)", origin: nil)
            }
            if case let .refuse(reason, origin) = verdict {
                let hint = origin.map { "lanbridge nodes allow \(paired.nodeId) \($0)" }
                var extra: [String: JSONValue] = ["reason": .string(AccessDecision.DenyReason.canvasURL(reason).code)]
                if let origin { extra["origin"] = .string(origin) }
                if let hint { extra["hint"] = .string(hint) }
                return .refuse(
                    ErrorMessage(
                        code: ErrorMessage.forbidden,
                        message: "\(command): a canvas may not load \(origin ?? "this URL"): \(reason)" + (hint.map { " (\($0))" } ?? ""),
                        details: details.merging(extra), retryable: false), denied: .canvasURL(reason))
            }
            if target != url {
                if case var .object(fields)? = params {
                    fields["url"] = .string(target)
                    params = .object(fields)
                } else {
                    params = .string(target)
                }
            }
        }
        guard let session else {
            let refusal = ErrorMessage(code: ErrorMessage.nodeNotConnected, message: "\(name) is not connected", details: details, retryable: true)
            return request.holdMs == nil ? .refuse(refusal, denied: nil) : .hold(node: paired, refusal: refusal)
        }
        guard session.inFlight < limits[.maxConcurrentInvokes] else {
            return refuse(
                ErrorMessage.rateLimited, "\(session.inFlight) invokes already in flight for this node",
                details: details.merging(["limit": "concurrentInvokes"]), retryable: true, retryAfterMs: 100)
        }
        guard !session.backlogged else {
            return refuse(
                ErrorMessage.nodeBacklogged, "\(name) is not reading what it was sent: more than \(limits[.nodeQueueBytes]) bytes wait for it",
                details: details.merging(["limit": "nodeQueueBytes"]), retryable: true, retryAfterMs: 1000)
        }
        if let asking, !approved { return .ask(node: paired, rule: asking) }
        if snapshotCommands.contains(where: { $0.matches(command) }),
            case let .limited(retryAfterMs) = buckets.take(.snapshot, node: paired.nodeId, limits: limits, now: now)
        {
            return refuse(
                ErrorMessage.rateLimited, "too many snapshots from this node; at most \(limits[.snapshotsPerMinute]) a minute",
                details: details.merging(["limit": "snapshotsPerMinute"]), retryable: true, retryAfterMs: retryAfterMs)
        }
        return .relay(node: paired, connection: session.connection, timeoutMs: timeoutMs, params: params)
    }

    /// A navigation's `url`: the value under `url` when the params are an object; the params
    /// themselves when they are anything else (a node reads `params.url` of whatever came).
    static func navigationURL(_ params: JSONValue?) -> JSONValue? {
        switch params {
        case nil, .null?: nil
        case let .object(fields)?: fields["url"]
        case let other?: other
        }
    }

    private func refuse(_ code: String, _ message: String, details: JSONValue? = nil, retryable: Bool? = nil, retryAfterMs: Int? = nil) -> Verdict {
        .refuse(ErrorMessage(code: code, message: message, details: details, retryable: retryable, retryAfterMs: retryAfterMs), denied: nil)
    }
}

extension JSONValue {
    package func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case let .object(fields) = self else { return self }
        return .object(fields.merging(other) { $1 })
    }
}
