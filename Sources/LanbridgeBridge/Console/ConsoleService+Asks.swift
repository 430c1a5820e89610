import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// The prompt's answers: the same `ask.answer` the CLI's `invokes approve|deny` sends, audited
/// as the console session's uid.
extension ConsoleService {
    func answerAsk(_ request: HTTPRequest, context: ConsolePages.Context) async -> HTTPReply {
        let form = request.form
        let actor = "uid:\(context.session.uid) (console)"
        func back(_ message: String, error: Bool = false) -> HTTPReply {
            auth.flash(message, error: error, session: context.sessionId)
            return .seeOther("/")
        }
        let id = form["id"] ?? ""
        var params: [String: JSONValue] = ["id": .string(id), "approve": true, "answeredBy": .string(actor)]
        switch form["answer"] {
        case "approve":
            break
        case "deny":
            params["approve"] = false
        case "for":
            guard let minutes = Int(form["minutes"] ?? ""), ConsolePages.approveForMinutes.contains(minutes) else {
                return back("Choose how long from the list.", error: true)
            }
            params["forMs"] = .number(Double(minutes * 60_000))
        case "always":
            // As `invokes approve --always`: the rule first, in paired.json (audited as a change of
            // access); the core reads the store again before it takes the answer.
            guard let prompt = await waitingAsks()?.first(where: { $0.id == id }) else { return back(Self.nothingWaits(id), error: true) }
            // nil: written; else why not.
            let problem: String?? = await onThreadPool { [directory] in
                do {
                    _ = try PairingStore(directory: directory).update(actor: actor) { try $0.askToAllow(prompt.askRule, node: prompt.nodeId) }
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            switch problem {
            case .some(nil): break
            case let .some(.some(why)): return back(why, error: true)
            case nil: return back("The bridge is stopping.", error: true)
            }
            params["always"] = true
        default:
            return back("Approve or deny.", error: true)
        }
        switch await control(.askAnswer, .object(params)) {
        case let .success(answered):
            let how = answered["answered"]?.stringValue ?? "answered"
            let command = answered["command"]?.stringValue ?? ""
            return back("\(how.prefix(1).uppercased() + how.dropFirst()): \(command).")
        case let .failure(error) where error.details?["reason"]?.stringValue == "UNKNOWN_ASK":
            return back(Self.nothingWaits(id), error: true)
        case let .failure(error):
            return back(error.message, error: true)
        }
    }

    static func nothingWaits(_ id: String) -> String {
        "Nothing waits for an answer as \(id): it was answered, it expired, or its asker gave up."
    }
}
