import FoundationEssentials
import LanbridgeCore

/// The prompt for invokes an ask rule holds (`nodes ask`): who wants to run what on which node,
/// the params' shape (never their values), and the answers `lanbridge invokes approve|deny` gives.
extension ConsolePages {
    /// How long "approve for" may last, offered as choices (minutes).
    static let approveForMinutes = [10, 60, 480]

    /// `nil`: the daemon did not say what waits (it is stopping, or too busy to answer in time).
    func askItems(_ asks: [AskedInvokes.Prompt]?) -> [String] {
        guard let asks else {
            return ["<p data-key=\"asks-unknown\" data-fp=\"\" class=\"bad\">The bridge did not say which invokes wait for your answer; reload in a moment.</p>"]
        }
        return asks.map(ask)
    }

    private func ask(_ a: AskedInvokes.Prompt) -> String {
        let key = HTML.escape("ask-" + a.id)
        let node = a.name.isEmpty ? a.nodeId : a.name
        let durations = Self.approveForMinutes.map { minutes in
            "<option value=\"\(minutes)\">\(minutes < 60 ? "\(minutes) minutes" : "\(minutes / 60) hour\(minutes == 60 ? "" : "s")")</option>"
        }.joined()
        let answers = HTML.form(
            "/asks/answer", csrf: csrf,
            HTML.hidden("id", a.id)
                + "<button class=\"primary\" name=\"answer\" value=\"approve\">Approve once</button>"
                + "<button name=\"answer\" value=\"always\" title=\"turn the ask rule into an allow rule\">Always allow</button>"
                + "<button class=\"danger\" name=\"answer\" value=\"deny\">Deny</button>")
        let forAWhile = HTML.form(
            "/asks/answer", csrf: csrf,
            HTML.hidden("id", a.id) + HTML.hidden("answer", "for")
                + "<label>Approve <code>\(HTML.escape(a.command))</code> on this node for <select name=\"minutes\">\(durations)</select></label><button>Approve</button>")
        return """
            <article class="ask" data-key="\(key)" data-fp="\(key)" id="\(key)">
            <h2><span class="tag warn">asks you</span> \(HTML.escape(node)) · <code>\(HTML.escape(a.command))</code></h2>
            <p class="meta">asked by \(HTML.escape(a.asker)) at \(HTML.escape(a.askedAt)) · refused unless answered within \(HTML.duration(Double(a.expiresInMs) / 1000)) · ask rule <code>\(HTML.escape(a.askRule))</code> · node <code>\(HTML.escape(a.nodeId))</code></p>
            <p>Params: <code class="params">\(HTML.escape(a.params))</code></p>
            \(answers)\(forAWhile)
            </article>
            """
    }
}
