import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState

/// The Activity page: what the agent did with each device, from the daemon's feed (the same
/// `activity.list` and `activity.counts` that `lanbridge activity` reads). Live: the newest
/// records appear without a reload.
enum ConsoleActivity {
    /// The newest records the page shows at most.
    static let shown = 500

    struct Feed: Sendable {
        var records: [ActivityFeed.Record]
        var counts: [ActivityFeed.Counts]
        var coversDay: Bool
        var capacity: Int

        /// Nil when the daemon did not answer (stopping, or too busy).
        static func read(_ control: (ControlMethod, JSONValue?) async -> Result<JSONValue, ErrorMessage>) async -> Feed? {
            guard case let .success(list) = await control(.activityList, ["limit": 1000]),
                case let .success(counts) = await control(.activityCounts, nil)
            else { return nil }
            func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue?) -> T? { try? (value ?? .array([])).decoded(as: type) }
            return Feed(
                records: decode([ActivityFeed.Record].self, list["records"]) ?? [], counts: decode([ActivityFeed.Counts].self, counts["nodes"]) ?? [],
                coversDay: counts["coversDay"] != .bool(false), capacity: decode(Int.self, list["capacity"]) ?? 0)
        }
    }

    /// The page's filters, from its query: node (ID or name), command pattern, outcome, sensitive only.
    struct Filter: Sendable {
        var node = "", command = "", outcome = "", sensitiveOnly = false

        init(_ query: [String: String]) {
            (node, command, outcome) = (query["node"] ?? "", query["command"] ?? "", query["outcome"] ?? "")
            sensitiveOnly = query["sensitive"] == "1"
        }

        /// The same filter as a query string, for the live fragment's URL.
        var query: String {
            [("node", node), ("command", command), ("outcome", outcome), ("sensitive", sensitiveOnly ? "1" : "")]
                .filter { !$0.1.isEmpty }.map { "\($0.0)=\(HTML.component($0.1))" }.joined(separator: "&")
        }

        func keeps(_ record: ActivityFeed.Record) -> Bool {
            let pattern = command.isEmpty ? nil : try? CommandPattern(command)
            return (node.isEmpty || record.nodeId == node || record.name.map(NameSkeleton.of) == NameSkeleton.of(node))
                && (command.isEmpty || pattern?.matches(record.command) == true)
                && (outcome.isEmpty || (outcome == "not-ok" ? record.outcome != "ok" : record.outcome == outcome))
                && (!sensitiveOnly || CommandCatalog.sensitivity(of: record.command) != nil)
        }
    }
}

extension ConsolePages {
    func activity(_ feed: ConsoleActivity.Feed?, filter: ConsoleActivity.Filter) -> String {
        let outcomes = ["ok", "not-ok"] + Set(feed?.records.map(\.outcome) ?? []).subtracting(["ok"]).sorted()
        let options = ([("", "every outcome")] + outcomes.map { ($0, $0 == "not-ok" ? "not ok" : $0) }).map { value, label in
            "<option value=\"\(HTML.escape(value))\"\(value == filter.outcome ? " selected" : "")>\(HTML.escape(label))</option>"
        }.joined()
        let form = """
            <form method="get" action="/activity" class="inline">
            <label>Node <input type="text" name="node" value="\(HTML.escape(filter.node))" placeholder="name or ID"></label>
            <label>Command <input type="text" name="command" value="\(HTML.escape(filter.command))" placeholder="camera.*"></label>
            <select name="outcome" aria-label="outcome">\(options)</select>
            <label class="check"><input type="checkbox" name="sensitive" value="1"\(filter.sensitiveOnly ? " checked" : "")> <span>sensitive only</span></label>
            <button>Filter</button></form>
            """
        return layout(
            title: "Activity", current: "/activity",
            body: """
                <p class="meta">Every invoke through the bridge, newest first: who asked, the outcome, never the params. Kept in memory (the newest \(feed?.capacity ?? 0), limits.activityRecords); a restart empties it.</p>
                \(form)\(activitySection(feed, filter: filter))
                """)
    }

    func activitySection(_ feed: ConsoleActivity.Feed?, filter: ConsoleActivity.Filter) -> String {
        let fragment = "/fragment/activity" + (filter.query.isEmpty ? "" : "?" + filter.query)
        let open = "<section id=\"live\" data-fragment=\"\(HTML.escape(fragment))\" data-events=\"activity\">"
        guard let feed else {
            return open + "<p data-key=\"unknown\" data-fp=\"\" class=\"bad\">The bridge did not answer; reload in a moment.</p></section>"
        }
        let counts = feed.counts.map { c in
            "<tr><td>\(HTML.escape(c.name ?? c.nodeId))</td><td>\(c.lastHour)</td><td>\(c.lastDay)</td><td>\(c.notOkLastDay)</td></tr>"
        }.joined()
        let countsCard = """
            <div class="card" data-key="counts" data-fp="\(HTML.escape(feed.counts.map { "\($0.nodeId):\($0.lastHour):\($0.lastDay):\($0.notOkLastDay)" }.joined(separator: ",")))">
            <h2>Per node</h2>\(feed.counts.isEmpty ? "<p class=\"none\">No invokes in the last day.</p>" : "<table><tr><th>Node</th><th>Last hour</th><th>Last day</th><th>Not ok (day)</th></tr>\(counts)</table>")
            \(feed.coversDay ? "" : "<p class=\"meta\">The feed holds less than a day: the day's figures are lower bounds.</p>")</div>
            """
        let shown = feed.records.reversed().filter(filter.keeps).prefix(ConsoleActivity.shown)
        let rows = shown.map { r in
            let sensitive = CommandCatalog.sensitivity(of: r.command).map { " <span class=\"tag warn\" title=\"\(HTML.escape($0.rawValue))\">sensitive</span>" } ?? ""
            let time = HTML.time(r.time)
            return
                "<tr data-key=\"\(r.seq)\"><td class=\"mono\" title=\"\(time)\">\(time.split(separator: "T").last.map(String.init) ?? time)</td><td>\(HTML.escape(r.name ?? r.nodeId ?? "?"))</td>"
                + "<td><code>\(HTML.escape(r.command))</code>\(sensitive)</td><td>\(HTML.escape(r.asker))</td>"
                + "<td class=\"\(r.outcome == "ok" ? "ok" : "bad")\">\(HTML.escape(r.outcome))</td><td class=\"wide\">\(HTML.escape(r.note ?? ""))</td>"
                + "<td class=\"wide\">\(r.durationMs) ms · \(r.resultBytes) B</td></tr>"
        }.joined()
        let table = """
            <div class="card" data-key="records" data-fp="\(shown.first?.seq ?? 0).\(shown.count)">
            \(shown.isEmpty ? "<p class=\"none\">No invokes match.</p>" : "<table><tr><th>Time</th><th>Node</th><th>Command</th><th>Asked by</th><th>Outcome</th><th class=\"wide\">Why</th><th class=\"wide\">Took</th></tr>\(rows)</table>")
            </div>
            """
        return open + countsCard + table + "</section>"
    }
}
