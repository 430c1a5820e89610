import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Ask rules (`nodes ask`): an invoke they match waits for the operator's answer, given on the
/// control socket (`lanbridge invokes pending|approve|deny`), and is decided again when it is yes.
extension BridgeCore {
    /// An invoke an ask rule matched: it waits for the operator, or is refused at a bound.
    mutating func ask(_ request: InvokeRequest, origin: InvokeBook.Origin, waiter: InvokeBook.Waiter, node: PairedNode, rule: String, wall: Date) {
        let entry = AskedInvokes.Entry(
            id: Hex.encode(random(5)), request: request, origin: origin, waiter: waiter, node: node.nodeId, rule: rule, askedAt: wall,
            expires: now.adding(milliseconds: book.asked.limits.timeoutMs))
        guard book.ask(entry, now: now) else { return }
        if settings.notify.hook.exec != nil { actions.append(.notifyOperator(settings.notify, prompt(entry))) }
        logger.notice(
            "invoke waits for the operator: lanbridge invokes approve \(entry.id)",
            metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)", "command": "\(request.command)", "askRule": "\(rule)"])
    }

    /// What waits, oldest first: never the params, only their shape (`summary`).
    func askList(wall: Date) throws(ErrorMessage) -> JSONValue {
        ["asks": try .answer(book.asked.entries.map(prompt))]
    }

    private func prompt(_ entry: AskedInvokes.Entry) -> AskedInvokes.Prompt {
        AskedInvokes.Prompt(
            id: entry.id, nodeId: entry.node.description, name: paired[entry.node]?.details.displayName ?? "", command: entry.request.command,
            askRule: entry.rule, asker: Self.asker(entry.waiter.target), askedAt: ISO8601Text.string(entry.askedAt), params: Self.summary(of: entry.request.params),
            expiresInMs: max(0, Int(entry.expires.timeIntervalSince(now) * 1000)))
    }

    /// The operator's answer. An unknown, answered or expired ID changes nothing.
    mutating func answerAsk(_ params: JSONValue?, wall: Date) throws(ErrorMessage) -> JSONValue {
        let method = ControlMethod.askAnswer.name
        let id = try InvokeRequest.string("id", in: params, method: method)!
        guard case let .bool(approve)? = params?["approve"] else { throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method): approve is true or false") }
        let forMs = try InvokeRequest.int("forMs", in: params, method: method)
        let always = params?["always"] == .bool(true)
        let by = try InvokeRequest.string("answeredBy", in: params, method: method, required: false) ?? "operator"
        if let forMs, !(1...86_400_000).contains(forMs) { throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method): forMs is 1 to 86400000") }
        // --always is the CLI's change of paired.json, confirmed before it answers: the audit line
        // must not say "always" while the ask rule still stands.
        if always, let waiting = book.asked.entries.first(where: { $0.id == id }), let rules = rules[waiting.node],
            rules.askingRule(waiting.request.command) != nil
        {
            throw ErrorMessage(
                code: ErrorMessage.invalidRequest,
                message:
                    "\(method): always, but an ask rule still matches \(waiting.request.command) in the rules this bridge holds (lanbridge invokes approve --always changes them first)"
            )
        }
        guard var entry = book.answerAsked(id) else {
            throw ErrorMessage(
                code: ErrorMessage.nodeNotFound, message: "no invoke waits for an answer as \(id): it was answered, it expired, or the ID is wrong (lanbridge invokes pending)",
                details: ["id": .string(id), "reason": "UNKNOWN_ASK"])
        }
        let how = !approve ? "denied" : always ? "approved always" : forMs.map { "approved for \(NumberText.duration(seconds: Double($0) / 1000))" } ?? "approved once"
        actions.append(
            .audit([
                AuditEntry(
                    time: wall, event: approve ? "invoke.ask-approved" : "invoke.ask-denied", actor: by, nodeId: entry.node.description,
                    detail: "\(entry.request.command) (ask rule \(entry.rule), asked by \(Self.asker(entry.waiter.target))): \(how)")
            ]))
        entry.waiter.note = "asked (ask rule \(entry.rule)); \(how) by \(by)"
        logger.notice("the operator \(how) an asked invoke", metadata: ["node": "\(entry.node)", "command": "\(entry.request.command)", "by": "\(by)"])
        if approve {
            if let forMs { book.grantAsked(entry.node, entry.request.command, until: now.adding(milliseconds: forMs), now: now) }
            // Decided again as things are now: it may be held, refused or relayed, never asked twice.
            run(entry.request, origin: entry.origin, for: entry.waiter.target, slot: entry.waiter.slot, wall: wall, asked: entry)
        } else {
            book.finish(
                entry.waiter,
                .failure(
                    ErrorMessage(
                        code: ErrorMessage.forbidden, message: "\(entry.request.command): the operator said no (ask rule \(entry.rule))",
                        details: book.asked.details(entry, reason: ErrorMessage.askedDenied), retryable: false)), now: now)
        }
        return ["id": .string(id), "answered": .string(how), "nodeId": .string(entry.node.description), "command": .string(entry.request.command)]
    }

    static func asker(_ target: AnswerTarget) -> String {
        switch target {
        case .gateway: "gateway"
        case .control: "operator"
        case .openClaw: "openclaw"
        }
    }

    /// The params' shape for the operator's prompt, never their values: `{url: text (23), quality: number}`.
    static func summary(of params: JSONValue?) -> String {
        func kind(_ value: JSONValue) -> String {
            switch value {
            case let .string(text): "text (\(text.count))"
            case .number: "number"
            case .bool: "true/false"
            case .null: "null"
            case let .array(items): "list (\(items.count))"
            case let .object(fields): "object (\(fields.count))"
            }
        }
        guard let params else { return "none" }
        guard case let .object(fields) = params else { return kind(params) }
        let sorted = fields.sorted { $0.key < $1.key }
        let shown = sorted.prefix(8).map { "\($0.key.prefix(32)): \(kind($0.value))" }
        return "{" + shown.joined(separator: ", ") + (sorted.count > 8 ? ", … \(sorted.count - 8) more" : "") + "}"
    }
}
