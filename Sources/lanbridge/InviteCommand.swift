import ArgumentParser
import FoundationEssentials
import LanbridgeBridge
import LanbridgeDiscovery
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores

struct InviteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Create, list and revoke one-time invites that pair a device without a code.",
        subcommands: [Create.self, List.self, Revoke.self],
        defaultSubcommand: Create.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show live invites (never their secrets).")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false

        /// `allow`: exact rules (invites from before 0.8.0); `grant`: beyond the platform's everyday defaults.
        struct Row: Encodable { let id: String; let name: String?; let allow: [String]?; let grant: ApprovalGrant?; let createdAt: Date; let expiresAt: Date }

        func run() throws {
            try Output.run {
                let now = Date()
                let rows = try PairingStore(directory: state.directory).read().invites.invites.filter { $0.isOpen(at: now) }
                    .map { Row(id: String($0.id.prefix(8)), name: $0.name, allow: $0.allow, grant: $0.grant, createdAt: $0.createdAt, expiresAt: $0.expiresAt) }
                if json { return try Output.json(rows) }
                guard !rows.isEmpty else { return print("No live invites.") }
                func grants(_ row: Row) -> String {
                    if let exact = row.allow { return exact.joined(separator: ",") }
                    let extra = (row.grant?.allow ?? []) + (row.grant?.allowSensitive == true ? ["every sensitive command it declares"] : [])
                    return "platform defaults" + (extra.isEmpty ? "" : " + " + extra.joined(separator: ","))
                }
                Output.table(
                    ["INVITE", "NAME", "GRANTS", "LEFT"],
                    rows.map {
                        [$0.id, $0.name ?? "-", grants($0), Output.duration($0.expiresAt.timeIntervalSince(now))]
                    })
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a live invite before it is used.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The invite ID from `lanbridge invite list` (or a unique prefix of it).") var invite: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let removed = try PairingStore(directory: state.directory).update { try $0.revokeInvite(invite) }
                if json { return try Output.json(["revoked": String(removed.id.prefix(8))]) }
                print("Revoked invite \(removed.id.prefix(8))\(removed.name.map { " (\($0))" } ?? ""); its URI no longer works.")
            }
        }
    }
}

extension InviteCommand {
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a one-time invite that pairs a device without a code (the default).",
            discussion: """
                Prints a lanbridge:// URI and the same as a QR code. A device that uses it pairs at once, over a Noise XXpsk3 handshake keyed by the invite's secret, and pins this bridge's fingerprint from the URI. The invite works once and expires; only hashes of its secret are stored. Treat the URI like a password until it is used.

                The device gets its platform's everyday commands; --allow and --allow-sensitive pre-authorise more, as on `nodes approve`:

                  $ lanbridge invite --name "Ada's phone" --allow camera.snap

                With --openclaw it prints an OpenClaw setup code instead, for OpenClaw's own iOS and Android apps (the daemon runs with --openclaw-apps): paste or scan it in the app's gateway setup. It carries the front door's wss:// URL and a single-use bootstrap token that pairs the app at once; unlike approving a request by its certificate fingerprint, only the holder of the code can pair.

                  $ lanbridge invite --openclaw --name "Ada's iPhone"
                """
        )

        @OptionGroup var state: StateOptions
        @Option(help: "How long the invite stays valid: 90s, 10m, 2h.") var ttl = Duration(argument: "10m")!
        @Option(help: "Display name to give the device.") var name: String?
        @OptionGroup var grant: GrantOptions
        @Option(help: "Address devices should dial. Default: the running daemon's, else this host's first LAN address.") var host: DialHost?
        @Option(help: "Port devices should dial. Default: the running daemon's, else 18790.") var port: Port?
        @Flag(help: "Do not draw the QR code.") var noQR = false
        @Flag(help: "An OpenClaw setup code for OpenClaw's own apps (wss URL and bootstrap token) instead of a lanbridge:// invite.") var openclaw = false
        @Flag(help: "A link to the browser door's page for a browser (https://NAME:PORT/#i=…&fp=…) instead of a lanbridge:// invite.") var browser = false
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if port?.value == 0 { throw ValidationError("--port must be between 1 and 65535") }
            if browser && openclaw { throw ValidationError("--browser and --openclaw make different invites: choose one") }
            if browser && (host != nil || port != nil) { throw ValidationError("--browser links to the browser door's page: its name is the bridge CA's, its port the door's") }
        }

        func run() throws {
            try Output.run {
                // Everything is checked before anything is written: the patterns as `nodes allow` checks them.
                let settings = try state.settings()
                let grant = try grant.grant(settings.catalog)
                let runtime = RuntimeStatusFile(directory: state.directory).read()
                if openclaw {
                    if runtime != nil, runtime?.openClawApps == nil {
                        Output.note("note: the running daemon has no door for OpenClaw's apps; start it with --openclaw-apps (or openclawApps.enabled)")
                    }
                    let setup = try InviteIssuer.issueOpenClaw(
                        directory: state.directory, name: name, grant: grant, ttl: ttl.seconds,
                        host: host?.name, port: port?.value, runtime: runtime)
                    warnIfOnlyThisMachine(ListeningAddress.split(String(setup.url.drop { $0 != "/" }.dropFirst(2)))?.host)
                    if json { return try Output.json(setup) }
                    if !noQR, let qr = QRCode(setup.setupCode) { print(qr.terminal) }
                    print(setup.setupCode)
                    print("OpenClaw setup code for \(setup.url): one use; expires \(ISO8601Text.string(setup.expiresAt)) (in \(Output.duration(ttl.seconds))).")
                    if let sha = runtime?.canvas?.tlsSha256 { print("The app will show the bridge's certificate: sha256 \(sha).") }
                    return
                }
                if browser {
                    if settings.browser.tls == .selfSigned {
                        throw ValidationError(
                            "the browser door serves a self-signed certificate (browser.tls), so a phone cannot tell its page from one a man in the middle serves, and that page would read the invite's secret from the link: pair browsers there by code, or serve the door with the bridge CA or your own certificate"
                        )
                    }
                    guard let page = InviteIssuer.browserPage(directory: state.directory, settings: settings, runtime: runtime) else {
                        throw BridgeCAFiles.Problem(
                            .missing,
                            "a browser invite links to the browser door's page, and its name is unknown: make the bridge CA (`lanbridge ca init --name NAME.local`), or with your own certificate give browser.names, or start the daemon with the door"
                        )
                    }
                    if runtime != nil, runtime?.browser == nil {
                        Output.note("note: the running daemon has no browser door; start it with --browser (or browser.enabled)")
                    }
                    let invite = try InviteIssuer.issueBrowser(directory: state.directory, name: name, grant: grant, ttl: ttl.seconds, page: page)
                    if json { return try Output.json(invite) }
                    if !noQR, let qr = QRCode(invite.url) { print(qr.terminal) }
                    print(invite.url)
                    print("One use, in a browser that trusts the bridge CA; expires \(ISO8601Text.string(invite.expiresAt)) (in \(Output.duration(ttl.seconds))).")
                    return
                }
                let issued = try InviteIssuer.issue(
                    directory: state.directory, name: name, grant: grant, ttl: ttl.seconds,
                    host: host?.name, port: port?.value, runtime: runtime)
                let (uri, expires) = (issued.uri, issued.expiresAt)
                warnIfOnlyThisMachine(uri.host)
                if json {
                    struct Report: Encodable { let uri: String; let expiresAt: Date }
                    return try Output.json(Report(uri: uri.description, expiresAt: expires))
                }
                if !noQR, let qr = QRCode(uri.description) { print(qr.terminal) }
                print(uri.description)
                print("One use; expires \(ISO8601Text.string(expires)) (in \(Output.duration(ttl.seconds))).")
            }
        }

        /// An invite that names a loopback address reaches no device but this machine's own: say
        /// so (on stderr, so `--json` stays clean), with the two ways out.
        private func warnIfOnlyThisMachine(_ host: String?) {
            guard let host, GatewayEndpoint.isLoopback(host) else { return }
            Output.note(
                "warning: this invite points at \(host), which only this machine can reach: the daemon listens on loopback only. For devices on the LAN, run `lanbridge serve --listen lan` (or give --host with the LAN address devices should dial)."
            )
        }
    }
}
