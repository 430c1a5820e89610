/// The `Content-Security-Policy` the relay puts on every response it passes (issue 48 §2): what a
/// page loaded in a node's canvas may reach by itself. A script, an image, a frame, a form or a
/// `fetch` reaches the relay's own origin, `https:` and the origins the URL policy's rules allow
/// (the config's `canvas.allowOrigins`, the node's own), and nothing else: no `http:` (the
/// phone's router, the gateway's machine on the LAN), no other scheme that leaves the page.
///
/// What a header cannot stop, and the README says so: a page's navigation of itself
/// (`location = …`) and `https:` to a private address. `canvas.eval` is sensitive for that reason:
/// a script the agent writes runs only where the operator granted it on purpose.
public enum CanvasContentPolicy {
    /// `relayOrigin`: `https://host:port` as the node reached the relay. `allowed`: the origins
    /// the rules allow, beyond the defaults.
    public static func header(relayOrigin: String, allowed: [OriginPattern]) -> String {
        let socket = relayOrigin.hasPrefix("https://") ? ["wss://" + relayOrigin.dropFirst("https://".count)] : []
        let extra = allowed.map(\.description).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        func sources(_ first: [String]) -> String { (first + extra).joined(separator: " ") }
        return [
            "default-src " + sources(["'self'", "https:", "data:", "blob:", "'unsafe-inline'", "'unsafe-eval'"]),
            "connect-src " + sources(["'self'"] + socket + ["https:"]),
            "frame-src " + sources(["'self'", "https:"]),
            "form-action " + sources(["'self'", "https:"]),
            "object-src 'none'",
            "base-uri 'self'",
        ].joined(separator: "; ")
    }
}
