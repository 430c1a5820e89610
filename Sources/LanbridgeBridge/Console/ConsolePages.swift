import FoundationEssentials
import LanbridgeCore
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// The console's pages, rendered from the same files and descriptions the CLI prints
/// (`nodes pending`, `nodes describe`, `invite list`, `audit`, `status`). Every value a node or
/// an operator chose goes through `HTML.escape`.
struct ConsolePages {
    struct Context: Sendable {
        let sessionId: String
        let session: ConsoleSessions.Session
        let bridgeName: String
        let auth: ConsoleAuth
    }

    let directory: StateDirectory
    let settings: BridgeSettings
    let context: Context
    var csrf: String { context.session.csrf }

    // MARK: layout

    /// The pages, in the order the header lists them.
    static let navigation = [("/", "Pending"), ("/nodes", "Nodes"), ("/activity", "Activity"), ("/invites", "Invites"), ("/audit", "Audit"), ("/status", "Status")]

    func layout(title: String, current: String, body: String) -> String {
        let links = Self.navigation.map { path, name in
            "<a href=\"\(path)\"\(path == current ? " aria-current=\"page\"" : "")>\(name)</a>"
        }.joined()
        let flash =
            context.auth.takeFlash(session: context.sessionId).map {
                "<p class=\"flash\($0.error ? " error" : "")\" role=\"status\">\(HTML.escape($0.message))</p>"
            } ?? ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · lanbridge</title><link rel="stylesheet" href="/static/console.css"><script src="/static/console.js" defer></script></head>
            <body><header><span class="brand">lanbridge</span><span class="meta">\(HTML.escape(context.bridgeName)) · uid \(context.session.uid)</span><nav>\(links)</nav>
            \(HTML.form("/logout", csrf: csrf, "<button>Log out</button>"))</header>
            <main><h1>\(HTML.escape(title))</h1>\(flash)\(body)</main></body></html>
            """
    }

    static func loggedOut(_ message: String) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>lanbridge</title><link rel="stylesheet" href="/static/console.css"></head>
        <body><main><h1>lanbridge console</h1><p>\(message)</p></main></body></html>
        """
    }

    // MARK: pending

    /// What "Later" remembers of a request: it comes back when any of this changes.
    static func fingerprint(_ r: PendingRequest) -> String {
        "\(r.challenges).\(r.codeMismatches).\(r.code == nil ? 0 : 1).\(r.locked?.rawValue ?? "")"
    }

    /// Invokes waiting for the operator's answer first, then devices asking to pair.
    func pending(asks: [AskedInvokes.Prompt]?) throws -> String {
        layout(
            title: "Pending", current: "/",
            body: """
                <p class="meta">Approve a device only after typing the code it shows: the bridge's own is never shown here, so the two screens are compared, not copied.</p>
                \(try pendingSection(asks: asks))
                """)
    }

    func pendingSection(asks: [AskedInvokes.Prompt]?) throws -> String {
        let now = Date()
        let current = try PairingStore(directory: directory).read()
        let live = current.pending.requests.filter { $0.expiresAt > now }
        let shown = context.auth.shown(live.map { ($0.requestId, Self.fingerprint($0)) }, session: context.sessionId)
        let visible = live.filter { shown.contains($0.requestId) }
        let hidden = live.count - visible.count
        var items = askItems(asks)
        items += visible.map { request(in: current, $0, now: now) }
        if visible.isEmpty {
            items.append("<p data-key=\"empty\" data-fp=\"\(hidden)\">No pending pairing requests\(hidden > 0 ? " (\(hidden) put off until they change)" : "").</p>")
        } else if hidden > 0 {
            items.append("<p data-key=\"hidden\" data-fp=\"\(hidden)\" class=\"meta\">\(hidden) put off until they change.</p>")
        }
        return "<section id=\"live\" data-fragment=\"/fragment/pending\" data-events=\"change asks\">\(items.joined())</section>"
    }

    private func request(in state: PairingState, _ r: PendingRequest, now: Date) -> String {
        let key = HTML.escape(r.requestId)
        let status: String
        if let lock = r.locked {
            status = "<p class=\"bad\">LOCKED: \(HTML.escape(lock.explanation)). It can never be approved: reject it; the device must start over.</p>"
        } else if r.openClawApp != nil {
            status =
                "<p>One of OpenClaw's apps: it shows no code. It showed a certificate fingerprint before trusting this bridge: type its first 6 characters to approve (a setup code, <code>lanbridge invite --openclaw</code>, needs no such check).</p>"
        } else if r.code == nil {
            status = "<p>Waiting for the device to show its code.</p>"
        } else if r.browser == .unverified {
            status =
                "<p class=\"warn\">A browser on an unverified page (a self-signed certificate): whoever sits between it and the bridge could have served that page and its code. Approved, it is labelled browser-unverified and gets display-only grants.</p><p>The device shows a 6-digit code: type it to approve.</p>"
        } else {
            status = "<p>The device shows a 6-digit code: type it to approve.</p>"
        }
        var warnings: [String] = []
        var keyChoice = ""
        if let previous = state.keyChange(for: r) {
            warnings.append("KEY CHANGED: the name looks like the paired <code>\(HTML.escape(previous.nodeId.description))</code> under a new key. Check with its owner.")
            // The operator says which it is; neither is preselected, so approving needs a choice.
            keyChoice = """
                <div><label><input type="radio" name="keyChange" value="replace" required> replace <code>\(HTML.escape(previous.nodeId.description))</code> (its key revoked, its rules kept)</label><br>\
                <label><input type="radio" name="keyChange" value="add"> add a second device</label></div>
                """
        }
        if !state.sameName(as: r).isEmpty { warnings.append("SAME NAME as another pending request.") }
        let sensitive = r.details.commands.filter { CommandCatalog.sensitivity(of: $0) != nil }
        // Per sensitive command: withheld (the default, least privilege), asked each time, or granted.
        let grants = sensitive.map { command in
            let name = HTML.escape("sensitive." + command)
            return
                "<fieldset class=\"sensitive\"><legend><code>\(HTML.escape(command))</code> <span class=\"tag\">\(HTML.escape(CommandCatalog.sensitivity(of: command)?.rawValue ?? ""))</span></legend>"
                + "<label><input type=\"radio\" name=\"\(name)\" value=\"withhold\" checked> withhold</label>"
                + "<label><input type=\"radio\" name=\"\(name)\" value=\"ask\"> ask each time</label>"
                + "<label><input type=\"radio\" name=\"\(name)\" value=\"grant\"> grant</label></fieldset>"
        }.joined()
        let approve =
            r.locked == nil && r.openClawApp?.tlsSha256 != nil
            ? HTML.form(
                "/pending/approve", csrf: csrf, class: "block",
                """
                \(HTML.hidden("request", r.requestId))
                <label>Fingerprint on the device (first 6) <input class="code" type="text" name="fingerprint" pattern="[0-9a-fA-F: ]{6,8}" maxlength="8" autocomplete="off" required></label>
                \(grants.isEmpty ? "" : "<div>Sensitive commands it declares:\(grants)</div>")
                \(keyChoice)
                <div><button class="primary">Approve</button></div>
                """)
            : r.locked == nil && r.code != nil
                ? HTML.form(
                    "/pending/approve", csrf: csrf, class: "block",
                    """
                    \(HTML.hidden("request", r.requestId))
                    <label>Code on the device <input class="code" type="text" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="off" required></label>
                    \(grants.isEmpty ? "" : "<div>Sensitive commands it declares:\(grants)</div>")
                    \(keyChoice)
                    <div><button class="primary">Approve</button></div>
                    """) : ""
        let reject = HTML.form(
            "/pending/reject", csrf: csrf,
            HTML.hidden("request", r.requestId)
                + "<button name=\"block\" value=\"0\">Reject</button><button class=\"danger\" name=\"block\" value=\"1\">Reject and block</button>")
        let later = HTML.form("/pending/later", csrf: csrf, HTML.hidden("request", r.requestId) + "<button>Later</button>")
        let meta = [
            HTML.escape(r.details.platform) + (r.details.deviceModel.map { " · " + HTML.escape($0) } ?? ""),
            "from " + HTML.escape(r.sourceAddress ?? "unknown"),
            "asked " + HTML.duration(now.timeIntervalSince(r.createdAt)) + " ago",
            HTML.duration(r.expiresAt.timeIntervalSince(now)) + " left",
            "codes \(r.challenges)/\(PairingState.Limits.challengesPerRequest)",
            "wrong codes \(r.codeMismatches)",
        ].joined(separator: " · ")
        return """
            <article class="request" data-key="\(key)" data-fp="\(HTML.escape(Self.fingerprint(r)))" id="request-\(key)">
            <h2>\(HTML.escape(r.details.displayName))</h2>
            <p class="meta">\(meta)<br>request <code>\(key)</code> · node <code>\(HTML.escape(r.nodeId.description))</code></p>
            \(warnings.map { "<p class=\"warn\">\($0)</p>" }.joined())\(status)\(approve)\(reject)\(later)
            </article>
            """
    }

    // MARK: nodes

    func nodes() throws -> String {
        let blocked = try PairingStore(directory: directory).read().paired.blocked
        let blockedList =
            blocked.isEmpty
            ? ""
            : """
            <h2>Blocked keys</h2><table><tr><th>Name</th><th>Node ID</th><th class="wide">Since</th><th></th></tr>\(blocked.map { key in
                "<tr><td>\(HTML.escape(key.displayName))</td><td><code>\(HTML.escape(key.nodeId.description))</code></td><td class=\"wide\">\(HTML.time(key.blockedAt))</td><td>"
                    + HTML.form("/blocked/unblock", csrf: csrf, HTML.hidden("node", key.nodeId.description) + "<button>Unblock</button>") + "</td></tr>"
            }.joined())</table>
            """
        return layout(title: "Nodes", current: "/nodes", body: try nodesSection() + blockedList)
    }

    func descriptions() throws -> [NodeDescription] {
        let current = try PairingStore(directory: directory).read()
        let runtime = RuntimeStatusFile(directory: directory).read()
        return current.paired.nodes.map { NodeDescription($0, live: runtime?.nodes[$0.nodeId.description], policy: settings.policy, now: Date()) }
    }

    func nodesSection() throws -> String {
        let now = Date()
        let rows = try descriptions().map { d in
            let state = d.connected ? (d.foreground == false ? "connected, background" : "connected") : "offline"
            let fingerprint =
                "\(state)|\(d.displayName)|\(d.address ?? "")|\(d.allowedCommands.joined(separator: ","))|\(d.connected ? "" : HTML.duration(now.timeIntervalSince(d.lastSeen)))"
            return """
                <article data-key="\(HTML.escape(d.nodeId))" data-fp="\(HTML.escape(fingerprint))">
                <h2><a href="/nodes/\(HTML.component(d.nodeId))">\(HTML.escape(d.displayName))</a> <span class="tag \(d.connected ? "ok" : "")">\(state)</span></h2>
                <p class="meta">\(HTML.escape(d.platform)) · <code>\(HTML.escape(d.nodeId))</code> · \(d.connected ? "from " + HTML.escape(d.address ?? "?") : "last seen " + HTML.duration(now.timeIntervalSince(d.lastSeen)) + " ago")</p>
                <p>May run: \(HTML.list(d.allowedCommands))</p>
                </article>
                """
        }
        let empty = "<p data-key=\"empty\" data-fp=\"\">No paired nodes. Approve one under Pending, or create an invite.</p>"
        return "<section id=\"live\" data-fragment=\"/fragment/nodes\">\(rows.isEmpty ? empty : rows.joined())</section>"
    }

    func node(_ reference: String) throws -> String {
        let found = try PairingStore(directory: directory).read().node(matching: reference)
        guard let d = try descriptions().first(where: { $0.nodeId == found.nodeId.description }) else { throw PairingError.unknownNode(reference) }
        let page = "/nodes/\(HTML.component(d.nodeId))"
        let defaults = Set(settings.defaultRules(forPlatform: d.platform).allow)
        func rules(_ patterns: [String], kind: String) -> String {
            patterns.isEmpty
                ? "<p class=\"none\">No \(kind) rules.</p>"
                : patterns.map { pattern in
                    var tags = ""
                    if kind == "allow", defaults.contains(pattern) { tags += "<span class=\"tag\">platform default</span>" }
                    if kind == "allow", CommandCatalog.isSensitive(pattern: pattern) { tags += "<span class=\"tag warn\">sensitive</span>" }
                    return "<div><code>\(HTML.escape(pattern))</code>\(tags) "
                        + HTML.form(page + "/remove-rule", csrf: csrf, HTML.hidden("pattern", pattern) + HTML.hidden("kind", kind) + "<button>Remove</button>") + "</div>"
                }.joined()
        }
        let state = d.connected ? (d.foreground == false ? "connected, in the background" : "connected, in the foreground") : "offline"
        var facts: [(String, String)] = [
            ("Node ID", "<code>\(HTML.escape(d.nodeId))</code>"),
            (
                "Platform",
                HTML.escape([d.platform, d.osVersion ?? ""].joined(separator: " ")) + (d.deviceModel.map { " · " + HTML.escape($0) } ?? "")
                    + (d.appVersion.map { " · app " + HTML.escape($0) } ?? "")
            ),
            ("State", HTML.escape(state) + (d.address.map { " from " + HTML.escape($0) } ?? "")),
            ("Last seen", d.connected ? "now" : HTML.time(d.lastSeen)),
            (
                "Paired",
                HTML.time(d.pairedAt) + " by " + HTML.escape(d.pairingMethod.rawValue)
                    + (d.pairingMethod == .browserUnverified
                        ? " <span class=\"warn\">(an unverified page: its code proved nothing against a man in the middle)</span>" : "")
            ),
            ("Declared", declared(d, page: page)),
            ("May run", HTML.list(d.allowedCommands)),
            (
                "Flags",
                HTML.escape(d.flags.requiresForeground ? "canvas, camera and screen need the app in the foreground" : "works in the background")
                    + " · " + HTML.escape(d.flags.supportsInputInjection ? "can inject input" : "cannot inject input")
            ),
        ]
        if let old = d.grantedByOldDefault { facts.append(("Warning", "<span class=\"warn\">\(HTML.list(old)) granted by an old default</span>")) }
        if let push = d.push { facts.append(("Push", HTML.escape("\(push.provider) registered \(HTML.time(push.registeredAt))"))) }
        if let device = d.gatewayDeviceId {
            facts.append(
                (
                    "Gateway device",
                    "<code>\(HTML.escape(device))</code>: " + HTML.escape(d.gatewaySession ?? "unknown")
                        + (d.gatewayApproval.map { " · " + HTML.escape("\($0)") } ?? "")
                ))
        }
        let body = """
            <div class="card"><dl>\(facts.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined())</dl></div>
            <div class="card"><h2>Access rules</h2>
            <p class="meta">A command runs when an allow or ask rule matches it, no deny rule does, and the node declared it; an ask rule first waits for your answer (under Pending). Deny wins over ask, ask over allow. Changes apply to the next invoke.</p>
            <h3>Allow</h3>\(rules(d.access.allow, kind: "allow"))
            \(HTML.form(page + "/allow", csrf: csrf, "<label>Allow <input type=\"text\" name=\"pattern\" placeholder=\"camera.snap or canvas.*\" required></label><button>Add</button>"))
            <h3>Deny</h3>\(rules(d.access.deny, kind: "deny"))
            \(HTML.form(page + "/deny", csrf: csrf, "<label>Deny <input type=\"text\" name=\"pattern\" placeholder=\"canvas.eval\" required></label><button>Add</button>"))
            <h3>Ask each time</h3>\(rules(d.access.ask, kind: "ask"))
            \(HTML.form(page + "/ask", csrf: csrf, "<label>Ask <input type=\"text\" name=\"pattern\" placeholder=\"camera.snap\" required></label><button>Add</button>"))
            </div>
            <div class="card"><h2>Manage</h2>
            \(HTML.form(page + "/rename", csrf: csrf, "<label>Name <input type=\"text\" name=\"name\" maxlength=\"64\" value=\"\(HTML.escape(d.displayName))\" required></label><button>Rename</button>"))
            \(HTML.form(page + "/revoke", csrf: csrf, class: "block", """
            <label class="check"><input type="checkbox" name="confirm" value="yes" required> <span>Remove this pairing (a connected device is dropped at once)</span></label>
            <label class="check"><input type="checkbox" name="block" value="1"> <span>and block its key from asking again</span></label>
            <div><button class="danger">Revoke</button></div>
            """))
            </div>
            """
        return layout(title: d.displayName, current: "/nodes", body: body)
    }

    /// What the node declared; a sensitive command it may not run is marked withheld, with why,
    /// and can be granted from here (the same Allow as the rules below).
    private func declared(_ d: NodeDescription, page: String) -> String {
        guard !d.declaredCommands.isEmpty else { return "<span class=\"none\">none</span>" }
        let allowed = Set(d.allowedCommands)
        let plain = d.declaredCommands.filter { allowed.contains($0) || CommandCatalog.sensitivity(of: $0) == nil }
        let withheld = d.declaredCommands.filter { !allowed.contains($0) && CommandCatalog.sensitivity(of: $0) != nil }
        return HTML.list(plain)
            + withheld.map { command in
                "<div class=\"withheld\"><code>\(HTML.escape(command))</code><span class=\"tag warn\">sensitive: \(HTML.escape(CommandCatalog.sensitivity(of: command)?.rawValue ?? "")) · withheld</span> "
                    + HTML.form(page + "/allow", csrf: csrf, HTML.hidden("pattern", command) + "<button>Grant</button>") + "</div>"
            }.joined()
    }

    // MARK: invites

    func invites(issued: InviteIssuer.Issued?) throws -> String {
        let now = Date()
        let live = try PairingStore(directory: directory).read().invites.invites.filter { $0.isOpen(at: now) }
        let created =
            issued.map { issued in
                let uri = issued.uri.description
                return """
                    <div class="card" id="new-invite"><h2>New invite\(issued.uri.name.map { " for " + HTML.escape($0) } ?? "")</h2>
                    <p>Scan it with the device, or open the link on it. It works once, until \(HTML.time(issued.expiresAt)). Treat it like a password; it is shown only now.</p>
                    <div class="qr">\(QRCode(uri)?.svg(label: "invite QR code") ?? "<p class=\"bad\">too long for a QR code</p>")</div>
                    <p><code id="invite-uri">\(HTML.escape(uri))</code></p></div>
                    """
            } ?? ""
        let rows = live.map { invite in
            "<tr><td><code>\(HTML.escape(String(invite.id.prefix(8))))</code></td><td>\(HTML.escape(invite.name ?? "-"))</td><td>\(HTML.duration(invite.expiresAt.timeIntervalSince(now)))</td><td>"
                + HTML.form("/invites/revoke", csrf: csrf, HTML.hidden("invite", String(invite.id.prefix(8))) + "<button>Revoke</button>") + "</td></tr>"
        }.joined()
        let body = """
            \(created)
            <div class="card"><h2>Create an invite</h2>
            \(HTML.form("/invites/create", csrf: csrf, class: "block", """
            <label>Device name <input type="text" name="name" maxlength="64" placeholder="Ada's phone"></label>
            <label>Valid for (minutes) <input type="number" name="ttl" value="10" min="1" max="1440"></label>
            <label>Address devices dial <input type="text" name="host" placeholder="default: the bridge's own"></label>
            <div><button class="primary">Create</button></div>
            """))
            <p class="meta">The device gets its platform's everyday commands; grant sensitive ones on its page after it pairs.</p></div>
            <h2>Live invites</h2>
            \(live.isEmpty ? "<p class=\"none\">No live invites.</p>" : "<table><tr><th>Invite</th><th>Name</th><th>Left</th><th></th></tr>\(rows)</table>")
            """
        return layout(title: "Invites", current: "/invites", body: body)
    }

    // MARK: audit and status

    func audit(filter: String, event: String) throws -> String {
        let log = AuditLog(directory: directory)
        let paired = try PairingStore(directory: directory).read().paired.nodes
        let verification = try log.verify()
        let entries = (try? log.entries()) ?? []
        let unexplained = AuditLog.unexplained(paired, entries: entries)
        var verdict =
            verification.isIntact && unexplained.isEmpty
            ? "<p class=\"ok\">Intact: \(verification.lines) lines, the chain and its head agree.</p>" : ""
        if !verification.brokenAt.isEmpty {
            verdict += "<p class=\"bad\">TAMPERED: the chain breaks at line \(verification.brokenAt.map(String.init).joined(separator: ", ")).</p>"
        }
        if let truncated = verification.truncated { verdict += "<p class=\"bad\">TRUNCATED: \(HTML.escape(truncated)).</p>" }
        if !unexplained.isEmpty { verdict += "<p class=\"bad\">Paired with no approval in the log: \(HTML.list(unexplained)).</p>" }
        if verification.unanchored > 0 { verdict += "<p class=\"meta\">\(verification.unanchored) line(s) after the anchored head (a crash, or another writer).</p>" }
        let events = Set(entries.map(\.event)).sorted()
        let needle = filter.lowercased()
        let shown = entries.reversed().filter { entry in
            (event.isEmpty || entry.event == event)
                && (needle.isEmpty
                    || [entry.event, entry.actor, entry.nodeId ?? "", entry.requestId ?? "", entry.detail ?? ""]
                        .contains { $0.lowercased().contains(needle) })
        }.prefix(500)
        let options =
            (["<option value=\"\">every event</option>"]
            + events.map {
                "<option value=\"\(HTML.escape($0))\"\($0 == event ? " selected" : "")>\(HTML.escape($0))</option>"
            }).joined()
        let rows = shown.map { e in
            "<tr><td class=\"mono\">\(HTML.time(e.time))</td><td>\(HTML.escape(e.event))</td><td>\(HTML.escape(e.actor))</td>"
                + "<td><code>\(HTML.escape(e.nodeId ?? e.requestId ?? ""))</code></td><td class=\"wide\">\(HTML.escape(e.detail ?? ""))</td></tr>"
        }.joined()
        let body = """
            <div class="card">\(verdict)</div>
            <form method="get" action="/audit" class="inline"><label>Find <input type="text" name="q" value="\(HTML.escape(filter))"></label>
            <select name="event" aria-label="event">\(options)</select><button>Filter</button></form>
            <table><tr><th>Time</th><th>Event</th><th>Who</th><th>Node or request</th><th class="wide">Detail</th></tr>\(rows)</table>
            \(shown.count == 500 ? "<p class=\"meta\">The newest 500 shown; narrow the filter.</p>" : "")
            """
        return layout(title: "Audit log", current: "/audit", body: body)
    }

    func status(snapshot: BridgeHealth.Snapshot?) throws -> String {
        let report = try StatusReport.read(directory)
        var facts: [(String, String)] = []
        if report.running {
            facts += [
                ("Daemon", "running (pid \(report.pid ?? 0))" + (report.startedAt.map { " since " + HTML.time($0) } ?? "")),
                ("Listening", HTML.list(report.listening)),
                ("Reachable at", HTML.list(report.reachable)),
                ("Console", HTML.escape(report.console ?? "off")),
                ("mDNS", HTML.escape(report.mdns ?? "unknown") + (report.mdnsName.map { " as " + HTML.escape($0) } ?? "")),
                ("Gateway", HTML.escape(report.gateway ?? "unknown")),
            ]
        }
        let n = report.nodes
        facts += [
            ("Nodes", "\(n.connected) connected (\(n.foreground) in the foreground) of \(n.paired) paired"),
            ("Waiting", "\(n.pending) pending, \(n.blocked) blocked, \(n.invites) live invites"),
        ]
        if let snapshot {
            let problems = BridgeHealth.problems(snapshot)
            facts.append(("Health", problems.isEmpty ? "<span class=\"ok\">ok</span>" : "<span class=\"bad\">\(HTML.escape(problems.joined(separator: "; ")))</span>"))
        }
        for session in report.gatewaySessions {
            facts.append(
                (
                    "At the gateway",
                    "<code>\(HTML.escape(session.nodeId))</code> as <code>\(HTML.escape(String(session.deviceId.prefix(16))))…</code>: \(HTML.escape(session.session))"
                ))
        }
        return layout(
            title: "Status", current: "/status",
            body: "<div class=\"card\"><dl>\(facts.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined())</dl></div>"
                + "<p class=\"meta\">Prometheus metrics: <code>/metrics</code> on the metrics listener, when enabled.</p>")
    }
}
