import ArgumentParser
import FoundationEssentials
import Glibc
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

struct UICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Open the approval console in a browser: prints a one-time login link.",
        discussion: """
            The running daemon serves the console on loopback (127.0.0.1:18791 unless `serve --ui-listen` or ui.listen says otherwise). This asks it, over its control socket, for a login link: valid once, for 60 seconds, and only for you. The kernel tells the daemon which user each loopback connection belongs to, so the link and the session it opens answer to your uid alone: another user of this machine who sees the link or the session cookie gets 403. Any member of the lanbridge group, or root, may ask.

              $ lanbridge ui
              Open within 60 s (once): http://127.0.0.1:18791/login?token=…

            With a desktop session it also opens the link: it writes a page that forwards to it into a 0600 file in your runtime directory ($XDG_RUNTIME_DIR/lanbridge/) and opens that file, so the token never appears on a command line. Over SSH, forward the port first, from your own machine:

              $ ssh -L 18791:127.0.0.1:18791 you@this-server

            and open the link there (the tunnel's end on this machine is your uid). Under sudo the link is for the user who ran sudo; root may name another with --user. The token leaves the address bar once used; a session ends after 12 hours idle, with Log out, or with --logout-all.

              $ lanbridge ui --sessions        # your console sessions: when each began and was last used
              $ lanbridge ui --logout-all      # ends them all, and any link not yet opened

            Exit codes: 0 done; 69 the daemon is not running, or its console is off; 77 --user names another user and you are not root.
            """)

    @OptionGroup var state: StateOptions
    @Flag(help: "Only print the link; do not start a browser.") var noOpen = false
    @Flag(help: "List your console sessions instead (root: everyone's with --all).") var sessions = false
    @Flag(help: "End all your console sessions and unused login links (root: everyone's with --all).") var logoutAll = false
    @Flag(help: "With --sessions or --logout-all, as root: every user's.") var all = false
    @Option(help: "As root: the user (name or uid) whose browser will open the link. Default: yours, or the user who ran sudo.")
    var user: String?
    @Flag(help: "Print JSON: {url, base, expiresInSeconds, uid}; with --sessions {sessions}; with --logout-all {ended}.") var json = false

    func run() throws {
        try Output.run {
            var params: [String: JSONValue] = [:]
            if let uid = try targetUID() { params["uid"] = .number(Double(uid)) }
            if all { params["all"] = true }
            let method: ControlMethod = sessions ? .consoleSessions : logoutAll ? .consoleLogoutAll : .consoleLogin
            let answer = try ask(method, params)
            if json { return try Output.json(answer) }
            if sessions { return printSessions(answer) }
            if logoutAll {
                print("Ended \(answer["ended"]?.numberValue.map { Int($0) } ?? 0) console session(s); login links not yet used are void.")
                return
            }
            guard let url = answer["url"]?.stringValue, let base = answer["base"]?.stringValue else { throw ExitCode(69) }
            print("Open within 60 s (once): \(url)")
            let environment = ProcessInfo.processInfo.environment
            if environment["SSH_CONNECTION"] != nil, let port = URL(string: base)?.port {
                let host = ProcessInfo.processInfo.hostName
                print("Over SSH: on your own machine run `ssh -L \(port):127.0.0.1:\(port) \(environment["USER"].map { "\($0)@" } ?? "")\(host)`, then open the link there.")
            } else if !noOpen, environment["SUDO_UID"] == nil, environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil {
                open(url)
            }
        }
    }

    /// The uid to ask for: --user (root only), else under sudo the user who ran it, else none (the
    /// daemon takes the caller's).
    private func targetUID() throws -> UInt32? {
        if let user {
            let uid: UInt32
            if let number = UInt32(user) {
                uid = number
            } else if let entry = getpwnam(user) {
                uid = entry.pointee.pw_uid
            } else {
                throw ValidationError("no such user: \(user)")
            }
            guard getuid() == 0 || uid == getuid() else {
                Output.note("lanbridge: only root may open the console for another user")
                throw ExitCode(77)
            }
            return uid
        }
        if getuid() == 0, let sudo = ProcessInfo.processInfo.environment["SUDO_UID"], let uid = UInt32(sudo) { return uid }
        return nil
    }

    private func ask(_ method: ControlMethod, _ params: [String: JSONValue]) throws -> JSONValue {
        switch try ControlClient.answer(state.directory, method, params) {
        case let .success(value?): return value
        case .success(nil): throw ExitCode(69)
        case let .failure(error):
            Output.note("lanbridge: \(error.message)")
            throw ExitCode(error.code == ErrorMessage.forbidden ? 77 : 69)
        }
    }

    private func printSessions(_ answer: JSONValue) {
        guard case let .array(list)? = answer["sessions"], !list.isEmpty else {
            print("No console sessions.")
            return
        }
        print("UID     STARTED                   LAST USED")
        for session in list {
            let uid = session["uid"]?.numberValue.map { String(Int($0)) } ?? "?"
            print("\(uid.padded(to: 7)) \((session["created"]?.stringValue ?? "").padded(to: 25)) \(session["lastUsed"]?.stringValue ?? "")")
        }
    }

    /// Opens the link as Jupyter does: a 0600 page in the user's runtime directory forwards to it,
    /// and the browser is given the file's path, so the token is in no process's argv or environment.
    private func open(_ url: String) {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_RUNTIME_DIR"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        let directory = base.appendingPathComponent("lanbridge")
        // One file, overwritten each time: it holds only the latest link, which works once, for a minute, for this uid.
        let file = directory.appendingPathComponent("console.html")
        let escaped = url.replacingScalars { $0 == "&" ? "&amp;" : $0 == "\"" ? "&quot;" : nil }
        let page = """
            <!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=\(escaped)">\
            <title>lanbridge console</title></head><body><p><a href="\(escaped)">Open the lanbridge console</a></p></body></html>

            """
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            return
        }
        let fd = Glibc.open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        let bytes = Array(page.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else { return }
        Self.spawnQuietly(["xdg-open", file.path])
    }

    /// Starts a program found on PATH with this process's environment and its output discarded;
    /// not waited for (the CLI exits next).
    private static func spawnQuietly(_ arguments: [String]) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        _ = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
    }
}
