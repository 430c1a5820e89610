import FoundationEssentials
import LanbridgeCore
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// The approval console: who may use it and what each request does. Every change goes through
/// the store operations the CLI uses (`PairingStore.approve`, `reject`, `allow`, …), audited as
/// `uid:N (console)` for the person whose login link opened the session.
struct ConsoleService: HTTPService {
    let directory: StateDirectory
    let auth: ConsoleAuth
    let events: ConsoleEvents
    let settings: NIOLockedValueBox<BridgeSettings>
    let driver: BridgeDriver
    let bridgeName: String
    let logger: Logger

    func answer(_ request: HTTPRequest) async -> HTTPAnswer? {
        switch request.path {
        case "/static/console.css": return .reply(HTTPReply(status: .ok, headers: [("Content-Type", "text/css; charset=utf-8")], body: Array(ConsoleAssets.css.utf8)))
        case "/static/console.js": return .reply(HTTPReply(status: .ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(ConsoleAssets.js.utf8)))
        case "/login": return .reply(login(request))
        default: break
        }
        let known =
            request.path == "/events" || request.path == "/logout" || ["/fragment/", "/pending/", "/blocked/", "/asks/"].contains { request.path.hasPrefix($0) }
            || ConsolePages.navigation.contains { path, _ in request.path == path || (path != "/" && request.path.hasPrefix(path + "/")) }
        guard known else { return nil }
        let id: String, session: ConsoleSessions.Session
        switch auth.session(for: request) {
        case let .success(found)?:
            (id, session) = found
        case let .failure(refusal)?:
            refused(refusal, request, "a session cookie")
            return .reply(.html(.forbidden, ConsolePages.loggedOut(Self.explain(refusal))))
        case nil:
            return .reply(
                .html(
                    .unauthorized, ConsolePages.loggedOut("Log in with a link from <code>lanbridge ui</code>, run on this machine."),
                    headers: [ConsoleAuth.clearCookie]))
        }
        let context = ConsolePages.Context(sessionId: id, session: session, bridgeName: bridgeName, auth: auth)
        if request.method == .POST {
            if let refusal = Self.refusesWrite(request, csrf: session.csrf) { return .reply(refusal) }
            if request.path == "/asks/answer" { return .reply(await answerAsk(request, context: context)) }
            return .reply(await offLoop { post(request, context: context) })
        }
        guard request.method == .GET || request.method == .HEAD else { return .reply(.text(.methodNotAllowed, "GET or POST\n")) }
        if request.path == "/events" {
            return .events(headers: [], start: { [events] sink in events.add(sink) })
        }
        let live = await liveState(for: request.path)
        return .reply(await offLoop { get(request, context: context, live: live) })
    }

    /// A write must come from this console's own page: the session's CSRF token in the form, and
    /// no cross-origin `Origin` or `Sec-Fetch-Site`. Under `Referrer-Policy: no-referrer` a browser
    /// sends `Origin: null` even for its own form, so then `Sec-Fetch-Site: same-origin` must vouch.
    static func refusesWrite(_ request: HTTPRequest, csrf: String) -> HTTPReply? {
        let host = request.header("Host") ?? ""
        let site = request.header("Sec-Fetch-Site")
        if let site, site != "same-origin", site != "none" {
            return .text(.forbidden, "cross-site request refused\n")
        }
        if let origin = request.header("Origin"), origin != "http://\(host)", !(origin == "null" && site == "same-origin") {
            return .text(.forbidden, "cross-origin request refused\n")
        }
        guard let token = request.form["csrf"], Array(token.utf8).count == Array(csrf.utf8).count,
            zip(token.utf8, csrf.utf8).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0
        else {
            return .text(.forbidden, "the form is stale or not from this console: reload the page\n")
        }
        return nil
    }

    /// Only GET redeems: a HEAD (a link previewer's) would burn the link for nobody.
    private func login(_ request: HTTPRequest) -> HTTPReply {
        guard request.method == .GET else {
            return .text(.methodNotAllowed, "a login link is opened with GET\n", headers: [("Allow", "GET")])
        }
        guard let token = request.query["token"], !token.isEmpty else {
            return .html(.badRequest, ConsolePages.loggedOut("A login link carries a token: run <code>lanbridge ui</code> for one."))
        }
        switch auth.redeem(token, uid: request.peerUID) {
        case let .session(id, _):
            logger.notice("console: logged in", metadata: ["uid": "\(request.peerUID.map(String.init) ?? "?")"])
            // The notify hook's link lands on its prompt; only a plain ID is carried into the Location.
            let ask = request.query["ask"].flatMap { (1...32).contains($0.utf8.count) && $0.allSatisfy(\.isHexDigit) ? $0 : nil }
            return .seeOther(ask.map { "/#ask-\($0)" } ?? "/", headers: [ConsoleAuth.setCookie(id)])
        case let .refused(refusal):
            refused(refusal, request, "a login link")
            return .html(.forbidden, ConsolePages.loggedOut(Self.explain(refusal)))
        }
    }

    static func explain(_ refusal: ConsoleSessions.Refusal) -> String {
        switch refusal {
        case .wrongToken: "This login link is used, expired or wrong. Run <code>lanbridge ui</code> for a new one."
        case .otherUser: "This login or session belongs to another user of this machine. Run <code>lanbridge ui</code> as yourself."
        case .unknownUser:
            "The bridge could not tell which user of this machine this browser runs as, so it refuses. "
                + "Open the console from this machine's loopback (or an SSH tunnel to it)."
        }
    }

    /// Every refusal is counted; the log gets one line a minute per uid, with the count.
    private func refused(_ refusal: ConsoleSessions.Refusal, _ request: HTTPRequest, _ what: String) {
        driver.metrics.consoleRefused(refusal.rawValue)
        guard let count = auth.noteRefused(uid: request.peerUID) else { return }
        logger.warning(
            "console: refused \(what): \(refusal.rawValue)",
            metadata: [
                "uid": "\(request.peerUID.map(String.init) ?? "unknown")", "refusals": "\(count)",
            ])
    }

    // MARK: reading

    /// What a page shows of the daemon's memory (not its files), asked for before the page is
    /// rendered off the loop.
    struct LiveState {
        var snapshot: BridgeHealth.Snapshot?
        var asks: [AskedInvokes.Prompt]?
        var activity: ConsoleActivity.Feed?
    }

    private func liveState(for path: String) async -> LiveState {
        var live = LiveState()
        switch path {
        case "/status":
            live.snapshot = try? await driver.snapshot().get()
        case "/", "/fragment/pending":
            live.asks = await waitingAsks()
        case "/activity", "/fragment/activity":
            live.activity = await ConsoleActivity.Feed.read { method, params in await control(method, params) }
        default:
            break
        }
        return live
    }

    /// The invokes waiting for the operator's answer; nil when the core did not say.
    func waitingAsks() async -> [AskedInvokes.Prompt]? {
        (try? await control(.askList, nil).get()).flatMap { try? AskedInvokes.Prompt.list($0) }
    }

    /// A control-socket method, asked of the core as the operator (the console's session is one).
    func control(_ method: ControlMethod, _ params: JSONValue?) async -> Result<JSONValue, ErrorMessage> {
        switch await driver.request(method, params: params) {
        case let .success(.value(value?)): .success(value)
        case .success: .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "\(method): an unexpected answer"))
        case let .failure(error): .failure(error)
        }
    }

    private func get(_ request: HTTPRequest, context: ConsolePages.Context, live: LiveState) -> HTTPReply {
        let pages = ConsolePages(directory: directory, settings: settings.withLockedValue { $0 }, context: context)
        let path = request.path
        do {
            switch path {
            case "/": return .html(.ok, try pages.pending(asks: live.asks))
            case "/fragment/pending": return .html(.ok, try pages.pendingSection(asks: live.asks))
            case "/activity": return .html(.ok, pages.activity(live.activity, filter: ConsoleActivity.Filter(request.query)))
            case "/fragment/activity": return .html(.ok, pages.activitySection(live.activity, filter: ConsoleActivity.Filter(request.query)))
            case "/nodes": return .html(.ok, try pages.nodes())
            case "/fragment/nodes": return .html(.ok, try pages.nodesSection())
            case "/invites": return .html(.ok, try pages.invites(issued: auth.takeNewInvite(session: context.sessionId)))
            case "/audit": return .html(.ok, try pages.audit(filter: request.query["q"] ?? "", event: request.query["event"] ?? ""))
            case "/status": return .html(.ok, try pages.status(snapshot: live.snapshot))
            default:
                if let (node, action) = Self.nodePath(path), action == nil { return .html(.ok, try pages.node(node)) }
                return .html(.notFound, pages.layout(title: "Not found", current: "", body: "<p>No such page.</p>"))
            }
        } catch {
            return .html(.notFound, pages.layout(title: "Not found", current: "", body: "<p class=\"bad\">\(HTML.escape("\(error)"))</p>"))
        }
    }

    // MARK: writing

    private func post(_ request: HTTPRequest, context: ConsolePages.Context) -> HTTPReply {
        let form = request.form
        let actor = "uid:\(context.session.uid) (console)"
        let store = PairingStore(directory: directory)
        let settings = settings.withLockedValue { $0 }
        let path = request.path
        func back(_ to: String, _ message: String, error: Bool = false) -> HTTPReply {
            auth.flash(message, error: error, session: context.sessionId)
            return .seeOther(to)
        }
        func field(_ name: String) -> String { form[name] ?? "" }
        do {
            switch path {
            case "/logout":
                auth.end(context.sessionId)
                return .html(.ok, ConsolePages.loggedOut("Logged out."), headers: [ConsoleAuth.clearCookie])
            case "/pending/approve":
                let requestId = field("request"), code = field("code")
                let request = try store.read().request(requestId)
                if request?.openClawApp != nil {
                    // Compared, not copied: the page never shows the fingerprint (the store compares it).
                    let typed = field("fingerprint").lowercased().filter { $0.isHexDigit }
                    guard typed.count == 6 else {
                        return back("/", "Type the first 6 characters of the fingerprint the app shows.", error: true)
                    }
                } else {
                    guard code.utf8.count == 6, code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                        return back("/", "Type the 6 digits the device shows.", error: true)
                    }
                }
                let declared = request?.details.commands ?? []
                // Only sensitive commands the node declared can be chosen; anything else is ignored.
                let sensitive = declared.filter { CommandCatalog.sensitivity(of: $0) != nil }
                let granted = sensitive.filter { form["sensitive." + $0] == "grant" }
                let asked = sensitive.filter { form["sensitive." + $0] == "ask" }
                let shown = request?.openClawApp == nil ? code : String(field("fingerprint").lowercased().filter { $0.isHexDigit })
                let node: PairedNode
                let keyChange = KeyChangeChoice(rawValue: field("keyChange"))
                do {
                    node = try store.approve(
                        requestId, code: shown, unverified: false, grant: ApprovalGrant(allow: granted, ask: asked), settings: settings, keyChange: keyChange, actor: actor)
                } catch PairingError.fingerprintMismatch {
                    return back("/", "That is not the start of the fingerprint this bridge showed the app: do not approve it.", error: true)
                } catch PairingError.keyChangeUndecided(_, let name, _) {
                    return back("/", "This looks like the paired \(name) under a new key: choose replace or add.", error: true)
                } catch PairingError.unverifiedPage {
                    return back(
                        "/",
                        "This browser came through an unverified page: approve it without sensitive grants (grant them later with nodes allow … --unverified-page, if you must).",
                        error: true)
                }
                let replaced = keyChange == .replace ? " It replaces the old key, revoked; its rules carried over." : ""
                let asks = node.access.ask.isEmpty ? "" : " Asks you first: \(node.access.ask.joined(separator: ", "))."
                return back(
                    "/nodes/\(HTML.component(node.nodeId.description))",
                    "Approved \(node.details.displayName). Granted: \(node.access.allow.joined(separator: ", ")).\(asks)\(replaced)")
            case "/pending/reject":
                let block = field("block") == "1"
                let rejected = try store.update(actor: actor) { try $0.reject(requestId: field("request"), block: block, now: Date()) }
                return back("/", "Rejected \(rejected.details.displayName)\(block ? " and blocked its key" : "").")
            case "/pending/later":
                let requestId = field("request")
                guard let pending = try store.read().request(requestId) else { return back("/", "That request is gone.", error: true) }
                auth.putOff(pending.requestId, fingerprint: ConsolePages.fingerprint(pending), session: context.sessionId)
                return back("/", "Put off \(pending.details.displayName) until it changes or another device asks.")
            case "/invites/create":
                let minutes = Double(field("ttl")) ?? 10
                guard minutes >= 1, minutes <= 24 * 60 else { return back("/invites", "The lifetime is 1 to 1440 minutes.", error: true) }
                let name = field("name").isEmpty ? nil : field("name")
                var host: String?
                if !field("host").isEmpty {
                    guard let valid = InviteURI.validHost(field("host")) else { return back("/invites", "Not a host name or IP address: \(field("host"))", error: true) }
                    host = valid
                }
                let issued = try InviteIssuer.issue(
                    directory: directory, name: name, grant: ApprovalGrant(), ttl: minutes * 60, host: host, port: nil,
                    runtime: RuntimeStatusFile(directory: directory).read(), actor: actor)
                // Shown once, by the page this redirects to: the secret is not stored on disk, and a
                // reload of that page neither shows it again nor creates another invite.
                auth.keepNewInvite(issued, session: context.sessionId)
                return .seeOther("/invites")
            case "/invites/revoke":
                let removed = try store.update(actor: actor) { try $0.revokeInvite(field("invite")) }
                return back("/invites", "Revoked invite \(removed.id.prefix(8)).")
            case "/blocked/unblock":
                let key = try store.update(actor: actor) { try $0.unblock(field("node")) }
                return back("/nodes", "Unblocked \(key.displayName); it may ask to pair again.")
            default:
                break
            }
            guard let (node, action) = Self.nodePath(path), let action else { return .text(.notFound, "not found\n") }
            let page = Self.returnPage(path)
            switch action {
            case "allow", "deny", "ask":
                let pattern = field("pattern").trimmingWhitespace()
                if pattern == "*" && action == "allow" { return back(page, "`*` is granted only from the CLI, with --allow-everything.", error: true) }
                let kind = PairingState.RuleKind(rawValue: action) ?? .deny
                let updated = try store.addRule(pattern, kind, node: node, catalog: settings.catalog, actor: actor).after
                let done = ["allow": "Allowed", "deny": "Denied", "ask": "Asks you first for"][action] ?? action
                return back(page, "\(done) \(pattern) for \(updated.details.displayName).")
            case "remove-rule":
                guard let kind = PairingState.RuleKind(rawValue: field("kind")) else { return back(page, "No such kind of rule.", error: true) }
                _ = try store.update(actor: actor) { try $0.removeRule(field("pattern"), kind: kind, node: node) }
                return back(page, "Removed the \(kind.rawValue) rule \(field("pattern")).")
            case "rename":
                let renamed = try store.update(actor: actor) { try $0.rename(node, to: field("name")) }
                return back(page, "Renamed to \(renamed.details.displayName).")
            case "revoke":
                guard field("confirm") == "yes" else { return back(page, "Tick the box to confirm the revocation.", error: true) }
                let block = field("block") == "1"
                // Read first: the daemon forgets the node's gateway identity once the pairing is gone.
                let devices = RuntimeStatusFile(directory: directory).read()?.openClawDevices
                let removed = try store.update(actor: actor) { try $0.revoke(matching: node, block: block, now: Date()) }
                let kept = devices?[removed.nodeId.description].map { " " + OpenClawCommands.keptNotice(deviceId: $0) }
                return back("/nodes", "Revoked \(removed.details.displayName)\(block ? " and blocked its key" : "").\(kept ?? "")")
            default:
                return .text(.notFound, "not found\n")
            }
        } catch {
            return back(Self.returnPage(path), "\(error)", error: true)
        }
    }

    /// `/nodes/ID` or `/nodes/ID/ACTION`: the node (percent-decoded) and the action.
    static func nodePath(_ path: String) -> (node: String, action: String?)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)  // "", "nodes", ID[, ACTION]
        guard parts.count == 3 || parts.count == 4, parts[1] == "nodes", !parts[2].isEmpty else { return nil }
        return (PercentEncoding.decode(parts[2]) ?? String(parts[2]), parts.count == 4 ? String(parts[3]) : nil)
    }

    /// The page a change made at `path` returns to, with its message.
    static func returnPage(_ path: String) -> String {
        if let (node, _) = nodePath(path) { return "/nodes/" + HTML.component(node) }
        return path.hasPrefix("/invites") ? "/invites" : path.hasPrefix("/blocked") ? "/nodes" : "/"
    }

    /// Store reads and writes take a file lock and touch the disk: never on an event loop.
    func offLoop(_ body: @escaping @Sendable () -> HTTPReply) async -> HTTPReply {
        await onThreadPool(body) ?? .text(.serviceUnavailable, "the bridge is stopping\n")
    }

    /// `body` on NIO's thread pool; nil when the bridge is stopping.
    func onThreadPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        try? await NIOThreadPool.singleton.runIfActive(body)
    }
}
