/// Every method the daemon answers, on the gateway link (PROTOCOL.md §12.3) and the operator's
/// control socket (§12.7), in one table, as `Limit` is for numbers. A method's name is written
/// here and nowhere else; its spec says who may call it, which part answers, its params and what
/// it does. `ControlSocket.dispatch` routes by `answeredBy`, the core checks `callers`, the CLI
/// calls by case, and PROTOCOL.md §12.7's list is `markdownTable` (ControlMethodTableTests checks
/// it). Adding a method: a case and its spec here, its handler where `answeredBy` says, and the
/// CLI command that calls it (DEVELOPERS.md, "Where a change goes").
public enum ControlMethod: String, CaseIterable, Sendable {
    case nodeList = "node.list"
    case nodeDescribe = "node.describe"
    case nodeInvoke = "node.invoke"
    case nodeInvokeCancel = "node.invoke.cancel"
    case storeApplied = "store.applied"
    case activityList = "activity.list"
    case activityCounts = "activity.counts"
    case askList = "ask.list"
    case askAnswer = "ask.answer"
    case canvasRotateCertificate = "canvas.rotateCertificate"
    case gatewayReconnect = "gateway.reconnect"
    case consoleLogin = "console.login"
    case consoleSessions = "console.sessions"
    case consoleLogoutAll = "console.logoutAll"

    /// Who may call a method: the gateway over its link and the operator on the control socket,
    /// or the operator alone (a caller the socket admitted: its user, root, or the sharing group).
    public enum Callers: String, Sendable {
        case gatewayAndOperator = "gateway, operator"
        case operatorOnly = "operator"
    }

    /// Which part answers: the core (a decision on the state it holds), the driver (work on the
    /// daemon's doors or links), or the control socket itself (the caller's uid is the question).
    public enum Answerer: String, Sendable {
        case core, driver, socket
    }

    public struct Spec: Sendable {
        public let callers: Callers
        public let answeredBy: Answerer
        /// The params, as PROTOCOL.md writes them (`?` marks an optional one).
        public let params: String
        /// What it answers or does, in a line.
        public let doc: String
    }

    public var name: String { rawValue }

    public var spec: Spec {
        switch self {
        case .nodeList: Spec(callers: .gatewayAndOperator, answeredBy: .core, params: "{}", doc: "every paired node, connected or not (§12.3)")
        case .nodeDescribe: Spec(callers: .gatewayAndOperator, answeredBy: .core, params: "{nodeId}", doc: "one node, by ID, name or prefix (§12.3)")
        case .nodeInvoke:
            Spec(
                callers: .gatewayAndOperator, answeredBy: .core, params: "{nodeId, command, params?, idempotencyKey?, timeoutMs?, hold?}",
                doc: "a command run on a node, under its rules (§12.3)")
        case .nodeInvokeCancel:
            Spec(callers: .gatewayAndOperator, answeredBy: .core, params: "{nodeId, idempotencyKey | id}", doc: "the asker's own invoke, cancelled (§12.3)")
        case .storeApplied:
            Spec(
                callers: .operatorOnly, answeredBy: .core, params: "{}",
                doc: "`{version}`: the paired.json the daemon holds, after comparing it with the file")
        case .activityList:
            Spec(
                callers: .operatorOnly, answeredBy: .core, params: "{since?, node?, command?, limit?}",
                doc: "`{records, next, capacity}`: the activity feed, oldest first (`lanbridge activity`)")
        case .activityCounts:
            Spec(
                callers: .operatorOnly, answeredBy: .core, params: "{}",
                doc: "`{nodes, coversDay}`: each node's invokes in the last hour and day (`lanbridge activity --counts`)")
        case .askList:
            Spec(callers: .operatorOnly, answeredBy: .core, params: "{}", doc: "`{asks}`: the invokes an ask rule holds for the operator (`lanbridge invokes pending`)")
        case .askAnswer:
            Spec(
                callers: .operatorOnly, answeredBy: .core, params: "{id, approve, forMs?, always?}",
                doc: "the operator's answer to one; the socket records the caller's uid (`lanbridge invokes approve|deny`)")
        case .canvasRotateCertificate:
            Spec(
                callers: .operatorOnly, answeredBy: .driver, params: "{}",
                doc: "`{tlsSha256}`: a new canvas relay certificate; nodes pin it at their next connection (`lanbridge canvas rotate-cert`)")
        case .gatewayReconnect:
            Spec(
                callers: .operatorOnly, answeredBy: .driver, params: "{}",
                doc: "`{redialled, state}`: a link that is down dials at once, not after its backoff (`lanbridge gateway reconnect`)")
        case .consoleLogin:
            Spec(
                callers: .operatorOnly, answeredBy: .socket, params: "{uid?}",
                doc: "`{url, base, expiresInSeconds, uid}`: a single-use console login link for the caller's uid (`lanbridge ui`)")
        case .consoleSessions:
            Spec(callers: .operatorOnly, answeredBy: .socket, params: "{all?}", doc: "`{sessions}`: the caller's console sessions (`lanbridge ui --sessions`)")
        case .consoleLogoutAll:
            Spec(
                callers: .operatorOnly, answeredBy: .socket, params: "{all?}",
                doc: "`{ended}`: the caller's console sessions ended, unused links voided (`lanbridge ui --logout-all`)")
        }
    }

    /// The methods the gateway may call, for its "unknown method" error.
    public static var gatewayMethods: [ControlMethod] { allCases.filter { $0.spec.callers == .gatewayAndOperator } }

    /// PROTOCOL.md §12.7's list of every method (ControlMethodTableTests keeps the two equal).
    public static var markdownTable: String {
        var rows = ["| method | params | who may call | answered by | what |", "|---|---|---|---|---|"]
        for method in allCases {
            let spec = method.spec
            let cells = ["`\(method.name)`", "`\(spec.params)`", spec.callers.rawValue, spec.answeredBy.rawValue, spec.doc]
            rows.append("| " + cells.map { $0.replacing("|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return rows.joined(separator: "\n")
    }
}
