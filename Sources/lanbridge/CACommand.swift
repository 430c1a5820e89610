import ArgumentParser
import FoundationEssentials
import LanbridgeBridge
import LanbridgeFiles
import LanbridgeProtocol

/// `lanbridge ca`: the bridge's own certificate authority, for browser nodes (issue 64, tier 1).
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "The bridge's own certificate authority, which a phone installs to trust the bridge's pages.",
        discussion: """
            A web page cannot pin its connection's certificate, so a browser node is only as safe as the browser's own check of the page's origin. `ca init` makes a root and one intermediate whose X.509 Name Constraints allow the bridge's names (NAME.local, and LAN IPv4 addresses) and nothing else, and throws the root's private key away: the root you install on a phone can vouch for this bridge only, even if the intermediate's key were stolen. Leaves live at most 825 days (Apple's limit).

            Compare the root's SHA-256 with what the phone's certificate screen shows before you trust it. Changing the names means a new root, and a new install on every phone.

              $ lanbridge ca init --name kitchen.local --ip 192.168.1.20
              $ lanbridge ca show
              $ lanbridge ca export --mobileconfig kitchen.mobileconfig   # for iOS; --crt for Android
              $ lanbridge ca issue --name kitchen.local --out leaf.pem    # a serving leaf, for checking with other software

            The browser door (`serve --browser`) issues its own short-lived leaves from the intermediate, and offers the root on its port over plain http://NAME:PORT/ with the steps for each phone.
            """,
        subcommands: [Init.self, Show.self, Export.self, Issue.self])

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export", abstract: "Write the root as a phone installs it: a .crt (Android) or a .mobileconfig (iOS, macOS).",
            discussion: "Exit codes: 0 written, 64 neither or both formats given, 69 there is no CA.")
        @OptionGroup var state: StateOptions
        @Option(help: "Write the root's certificate (DER) here.") var crt: String?
        @Option(help: "Write an (unsigned) configuration profile carrying the root here.") var mobileconfig: String?

        func validate() throws {
            if (crt == nil) == (mobileconfig == nil) { throw ValidationError("give one of --crt FILE or --mobileconfig FILE") }
        }

        func run() throws {
            try Output.run {
                guard let downloads = try BridgeCAFiles.downloads(directory: state.directory) else {
                    throw BridgeCAFiles.Problem(.missing, "no CA in \(state.directory.url.path) (lanbridge ca init makes one)")
                }
                let (path, bytes) = crt.map { ($0, downloads.crt) } ?? (mobileconfig ?? "", downloads.mobileconfig)
                try AtomicFile.write(bytes, to: URL(fileURLWithPath: path), mode: 0o644)
                print("Wrote the root to \(path). Its SHA-256, to compare on the phone: \(downloads.rootSha256)")
            }
        }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init", abstract: "Make the root and intermediate, and forget the root's key.",
            discussion: "Exit codes: 0 made, 64 a bad name, 73 a CA exists (--replace makes a new one), 70 it could not be made.")
        @OptionGroup var state: StateOptions
        @Option(name: .customLong("name"), help: "A DNS name the CA may vouch for (repeatable). Default: this host's NAME.local.") var names: [String] = []
        @Option(name: .customLong("ip"), help: "A LAN IPv4 address the CA may vouch for, as a /32 (repeatable).") var addresses: [String] = []
        @Flag(help: "Replace an existing CA (every phone must then install the new root).") var replace = false
        @Flag(help: "Print JSON: {rootSha256, rootFile, names}.") var json = false

        func run() throws {
            try Output.run {
                let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "lanbridge"
                let dns = names.isEmpty && addresses.isEmpty ? ["\(host.lowercased()).local"] : names
                let made = try BridgeCAFiles.initialize(directory: state.directory, dns: dns, ipv4: addresses, bridgeName: host, replace: replace)
                if json { return try Output.json(made) }
                print("Made the bridge's CA for \(made.names.joined(separator: ", ")); its root's key is gone.")
                print("Root certificate: \(made.rootFile)")
                print("Root SHA-256:     \(made.rootSha256)")
                print("Install the root on each phone, and compare this SHA-256 with what its certificate screen shows.")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "The root's SHA-256, its file and its names.", discussion: "Exit codes: 0 shown, 69 there is no CA (lanbridge ca init).")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON: {rootSha256, rootFile, names}.") var json = false

        func run() throws {
            try Output.run {
                guard let summary = try BridgeCAFiles.show(directory: state.directory) else {
                    Output.note("lanbridge: no CA in \(state.directory.url.path) (lanbridge ca init makes one)")
                    throw ExitCode(69)
                }
                if json { return try Output.json(summary) }
                print("Root certificate: \(summary.rootFile)")
                print("Root SHA-256:     \(summary.rootSha256)")
                print("Names:            \(summary.names.map { SafeText.escape($0) }.joined(separator: ", "))")
            }
        }
    }

    struct Issue: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "issue", abstract: "Issue a serving leaf for names the CA covers (its key, the leaf, the intermediate; PEM).",
            discussion: "The file is written 0600: it holds the leaf's private key. Exit codes: 0 written, 64 a bad name or lifetime, 69 there is no CA.")
        @OptionGroup var state: StateOptions
        @Option(name: .customLong("name"), help: "A DNS name for the leaf (repeatable).") var names: [String] = []
        @Option(name: .customLong("ip"), help: "An IPv4 address for the leaf (repeatable).") var addresses: [String] = []
        @Option(help: "Days the leaf lives, 1 to 825.") var days = 90
        @Option(help: "Where to write the PEM.") var out: String

        func run() throws {
            try Output.run {
                let pem = try BridgeCAFiles.issueLeaf(directory: state.directory, dns: names, ipv4: addresses, days: days)
                try AtomicFile.write(pem, to: URL(fileURLWithPath: out), mode: 0o600)
                print("Wrote a \(days)-day leaf for \((names + addresses).joined(separator: ", ")) to \(out).")
            }
        }
    }
}
