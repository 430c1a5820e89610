/// What the browser door does with one HTTP request, decided from its head alone (pure; tested in
/// BrowserRequestCheckTests). A page elsewhere can point a name of its own at this address (DNS
/// rebinding) or open a WebSocket here from its own origin (cross-site WebSocket hijacking):
/// `Host` must be one of the names the door's certificate carries, on the door's port, and the
/// node socket's `Origin` must be the door's own, exactly.
public struct BrowserRequestCheck: Sendable {
    public enum Verdict: Equatable, Sendable {
        /// Serve one of the shell's files.
        case asset(String)
        /// Upgrade to the node socket.
        case nodeSocket
        /// Answer with this status and text, then close.
        case refuse(status: Int, reason: String)
        /// Send the browser here (plain HTTP where the door has nothing to install).
        case redirect(String)
    }

    /// What plain HTTP may fetch: the install page, its style and script, and the root's downloads.
    public static let plainFiles: Set<String> = ["install.html", "install.js", "shell.css", "lanbridge-root.crt", "lanbridge.mobileconfig"]

    public static let socketPath = "/node"

    /// Host names and IP literals the door answers to, lowercased, without port.
    public let names: Set<String>
    public let port: Int
    /// The files served, by name (`/` is index.html).
    public let files: Set<String>

    public init(names: [String], port: Int, files: Set<String>) {
        (self.names, self.port, self.files) = (Set(names.map { $0.lowercased() }), port, files)
    }

    /// `plain`: the request came without TLS.
    public func judge(method: String, uri: String, host: String?, origin: String?, upgrade: Bool, plain: Bool = false) -> Verdict {
        guard let host, let authority = authority(host) else {
            return .refuse(status: 421, reason: "this door answers to its own names only")
        }
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        if plain {
            // Nothing to install (not the bridge CA's door), or not an install file: the page is HTTPS.
            let name = path == "/" ? "install.html" : String(path.dropFirst())
            guard files.contains("lanbridge-root.crt"), Self.plainFiles.contains(name), files.contains(name), method == "GET" || method == "HEAD" else {
                return .redirect("https://\(authority)/")
            }
            return .asset(name)
        }
        if path == Self.socketPath {
            guard upgrade, method == "GET" else { return .refuse(status: 426, reason: "the node socket is a WebSocket") }
            // Browsers always send Origin with a WebSocket; a page of another origin is refused
            // before any Noise state exists for it.
            guard origin == "https://\(authority)" else { return .refuse(status: 403, reason: "not this page's origin") }
            return .nodeSocket
        }
        guard method == "GET" || method == "HEAD" else { return .refuse(status: 405, reason: "the shell is read-only") }
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard files.contains(name) else { return .refuse(status: 404, reason: "not found") }
        return .asset(name)
    }

    private func covers(_ name: String) -> Bool { Self.covers(name, names: names) }

    /// Whether `name` (lowercased) is one of `names`, or one label under a `*.` entry (a wildcard
    /// certificate's, as browsers match it). The door's `Host` check and the relay's SNI choice.
    public static func covers(_ name: String, names: Set<String>) -> Bool {
        guard !name.contains("*") else { return false }
        if names.contains(name) { return true }
        guard let dot = name.firstIndex(of: "."), dot != name.startIndex else { return false }
        return names.contains("*" + name[dot...])
    }

    /// `Host` as the origin spells it, if it names this door: `name:port` (or `name` on 443).
    private func authority(_ host: String) -> String? {
        let lowered = host.lowercased()
        let name: Substring, given: Int
        if let colon = lowered.lastIndex(of: ":"), !lowered.hasPrefix("[") {
            let digits = lowered[lowered.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let p = Int(digits) else { return nil }
            (name, given) = (lowered[..<colon], p)
        } else {
            (name, given) = (Substring(lowered), 443)
        }
        guard given == port, covers(String(name)) else { return nil }
        return port == 443 ? String(name) : "\(name):\(port)"
    }
}
