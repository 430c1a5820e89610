import ArgumentParser
import Foundation
import LanbridgeProtocol
import LanbridgeState

struct UICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Open the approval console in a browser: prints a one-time login link.",
        discussion: """
        The running daemon serves the console on loopback (127.0.0.1:18791 unless `serve --ui-listen` or ui.listen says otherwise). This asks it, over its control socket, for a login link: valid once, for 60 seconds, for you (your uid is recorded in the audit log for what you do there). Any member of the lanbridge group, or root, may ask.

          $ lanbridge ui
          Open within 60 s (once): http://127.0.0.1:18791/login?token=…

        With a desktop session it also opens the link (xdg-open). Over SSH, forward the port first, from your own machine:

          $ ssh -L 18791:127.0.0.1:18791 you@this-server

        and open the link there. The token leaves the address bar once used; the session ends after 12 hours idle or with Log out.

        Exit codes: 0 printed; 69 the daemon is not running, or its console is off.
        """)

    @OptionGroup var state: StateOptions
    @Flag(help: "Only print the link; do not start a browser.") var noOpen = false
    @Flag(help: "Print JSON: {url, base, expiresInSeconds}.") var json = false

    func run() throws {
        try Output.run {
            let path = RuntimeStatusFile(directory: state.directory).read()?.controlSocket ?? state.directory.file("control.sock").path
            let answer: Result<JSONValue?, ErrorMessage>
            do {
                answer = try ControlClient(path: path).request(method: "console.login", params: .object([:]), timeout: 10)
            } catch let error as ControlClient.NotRunning {
                Output.note("lanbridge: \(error)")
                throw ExitCode(69)
            }
            guard case let .success(link?) = answer, case let .object(fields) = link, let url = fields["url"]?.stringValue,
                  let base = fields["base"]?.stringValue else {
                if case let .failure(error) = answer { Output.note("lanbridge: \(error.message)") }
                throw ExitCode(69)
            }
            if json { return try Output.json(link) }
            print("Open within 60 s (once): \(url)")
            let environment = ProcessInfo.processInfo.environment
            if environment["SSH_CONNECTION"] != nil, let port = URL(string: base)?.port {
                let host = ProcessInfo.processInfo.hostName
                print("Over SSH: on your own machine run `ssh -L \(port):127.0.0.1:\(port) \(environment["USER"].map { "\($0)@" } ?? "")\(host)`, then open the link there.")
            } else if !noOpen, environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil {
                let opener = Process()
                opener.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                opener.arguments = ["xdg-open", url]
                opener.standardOutput = FileHandle.nullDevice
                opener.standardError = FileHandle.nullDevice
                try? opener.run()
            }
        }
    }
}
