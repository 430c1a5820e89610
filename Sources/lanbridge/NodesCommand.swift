import ArgumentParser
import FoundationEssentials
import Glibc
import LanbridgeBridge
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

struct NodesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "Approve, list and revoke devices; edit what they may run; invoke commands.",
        discussion: """
            A typical approval, over SSH if need be:

              $ lanbridge nodes pending
              $ lanbridge nodes approve k3f9q2xm --code 048213   # the code the device shows

            These commands edit the state files directly, under a lock shared with the daemon, so they work whether or not `lanbridge serve` is running; a running daemon acts on the change at once.
            """,
        subcommands: [
            Pending.self, Approve.self, Reject.self, List.self, Describe.self, Allow.self, Deny.self, Ask.self, Invoke.self, Revoke.self,
            Rename.self, Unblock.self,
        ]
    )

    struct Pending: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show pairing requests waiting for approval.",
            discussion: """
                The bridge's own verification code is never printed: the approval compares the code the device shows with it (`approve` asks you for it, or takes --code), so the two screens are compared, not copied. CHECK says what to compare: "code" once the device shows its 6 digits, "(waiting)" until it has finished the code exchange, "fingerprint" for one of OpenClaw's apps (the first 6 characters of the certificate fingerprint it shows). TRIES counts the code challenges the device has had (at most \(PairingState.Limits.challengesPerRequest): each new one is a new code), and WRONG the `approve --code` attempts that gave another code.

                LOCKED marks a request that can never be approved: the device asked for new codes too often, or its commitment failed (what a man in the middle looks like). Reject it; the device must start over.

                KEY CHANGED marks a request whose name looks like an already-paired device under a new key; SAME NAME, one whose name another pending request also has. Check with the device's owner before approving.
                """)
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON.") var json = false
        @Flag(help: "Keep watching: print the list again whenever it changes (Ctrl-C to stop).") var watch = false

        struct Row: Encodable {
            let requestId, nodeId, displayName, platform: String
            let sourceAddress: String?
            /// The device shows its code now (the bridge's own is never printed: it is compared, not copied).
            let codeShown: Bool
            let createdAt, expiresAt: Date
            let ageSeconds, secondsLeft: Int
            let keyChanged: Bool
            let keyChangedFrom: String?
            let sameNameAs: [String]
            /// Declared sensitive commands: approval withholds them unless named (`--allow`, `--allow-sensitive`).
            let sensitiveCommands: [String]
            let challenges, codeMismatches: Int
            let locked: String?
            /// One of OpenClaw's apps: its device, and the certificate fingerprint it was shown (no code).
            let openClawApp: OpenClawAppClaim?
            /// A browser at the browser door: `browser`, or `browser-unverified` for a page the
            /// browser could not authenticate (its code proves nothing against a man in the middle).
            let browser: BrowserTier?
        }

        func run() async throws {
            try Output.run { try show() }
            guard watch else { return }
            fflush(nil)
            let watcher = try StoreWatcher(directory: state.directory.url, files: [PairingStore.pendingFileName, PairingStore.pairedFileName])
            defer { watcher.stop() }
            for await _ in watcher.changes() {
                if !json { print("--- \(ISO8601Text.string(Date()))") }
                try Output.run { try show() }
                fflush(nil)  // a pipe must see each listing as it happens
            }
        }

        private func show() throws {
            do {
                let now = Date()
                let current = try PairingStore(directory: state.directory).read()
                let live = current.pending.requests.filter { $0.expiresAt > now }
                let rows = live.map { r in
                    let previous = current.keyChange(for: r)
                    return Row(
                        requestId: r.requestId, nodeId: r.nodeId.description, displayName: r.details.displayName,
                        platform: r.details.platform, sourceAddress: r.sourceAddress, codeShown: r.locked == nil && r.code != nil,
                        createdAt: r.createdAt, expiresAt: r.expiresAt, ageSeconds: Int(now.timeIntervalSince(r.createdAt)),
                        secondsLeft: Int(r.expiresAt.timeIntervalSince(now)), keyChanged: previous != nil,
                        keyChangedFrom: previous?.nodeId.description, sameNameAs: current.sameName(as: r).map(\.requestId),
                        sensitiveCommands: r.details.commands.filter { CommandCatalog.sensitivity(of: $0) != nil },
                        challenges: r.challenges, codeMismatches: r.codeMismatches, locked: r.locked?.rawValue, openClawApp: r.openClawApp,
                        browser: r.browser)
                }
                if json { return try Output.json(rows) }
                if live.count >= PairingState.Limits.maxPending * 3 / 4 {
                    Output.note(
                        "warning: \(live.count) of \(PairingState.Limits.maxPending) pending slots in use; new requests now push out the oldest. A flood from one address: `lanbridge nodes reject --from ADDRESS`."
                    )
                }
                guard !rows.isEmpty else { return print("No pending pairing requests.") }
                Output.table(
                    ["REQUEST", "NODE ID", "NAME", "PLATFORM", "FROM", "AGE", "LEFT", "CHECK", "TRIES", "WRONG", ""],
                    rows.map {
                        [
                            $0.requestId, $0.nodeId, $0.displayName,
                            $0.platform + ($0.openClawApp == nil ? "" : " via openclaw-app") + ($0.browser.map { " via \($0.rawValue)" } ?? ""),
                            $0.sourceAddress ?? "-",
                            Output.duration(Double($0.ageSeconds)),
                            Output.duration(Double($0.secondsLeft)), $0.locked != nil ? "LOCKED" : $0.openClawApp != nil ? "fingerprint" : $0.codeShown ? "code" : "(waiting)",
                            "\($0.challenges)/\(PairingState.Limits.challengesPerRequest)", "\($0.codeMismatches)",
                            [$0.locked.map { "LOCKED: \($0)" }, $0.keyChanged ? "KEY CHANGED" : nil, $0.sameNameAs.isEmpty ? nil : "SAME NAME"]
                                .compactMap { $0 }.joined(separator: ", "),
                        ]
                    })
                for row in rows where row.browser == .unverified {
                    print(
                        "\(row.requestId) came through an unverified page (a self-signed certificate): whoever sits between the device and the bridge could have served that page and its code. Approving it pairs it as browser-unverified, with display-only grants."
                    )
                }
                for row in rows {
                    guard let app = row.openClawApp else { continue }
                    print(
                        "\(row.requestId) is one of OpenClaw's apps (\(app.clientId)), which shows no code: \(app.tlsSha256 == nil ? "it came over plain ws, so there is no fingerprint to compare (approve with --unverified only if you know the device)" : "approve with --fingerprint and the first 6 characters of the certificate fingerprint the app shows")"
                    )
                }
                for row in rows where !row.sensitiveCommands.isEmpty && row.locked == nil {
                    print(
                        "\(row.requestId) also declares \(row.sensitiveCommands.joined(separator: ", ")) (sensitive): approving grants them only with --allow CMD or --allow-sensitive"
                    )
                }
            }
        }
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve a pairing request.",
            discussion: """
                Pass --code with the code the device shows: the approval goes through only if it matches, and this is what defeats a man in the middle. A wrong code changes nothing but is written to the audit log and counted in `nodes pending`.

                --unverified approves without comparing codes. Anyone on the network who raced the real device would pass; it is recorded as unverified in the audit log. A request whose device has not shown a code yet, or that is LOCKED, cannot be approved at all. The node is told on its open connection.

                The node gets its platform's everyday commands (canvas, camera.list, system.info). Sensitive ones (camera and screen capture, microphone, SMS, location, input, system.run) only if named:

                  $ lanbridge nodes approve 3f2a9c1e --code 048213 --allow camera.snap
                  $ lanbridge nodes approve 3f2a9c1e --code 048213 --allow-sensitive   # all it declares

                The output lists what was granted and each declared command that was not, with the line that grants it later.

                One of OpenClaw's own apps (PLATFORM shows `via openclaw-app` in `nodes pending`) shows no code but the bridge's certificate fingerprint: pass its first 6 characters as --fingerprint, as the app shows them. They are compared with the certificate this bridge served that app, and a mismatch is refused and audited like a wrong code (or pair the app with `lanbridge invite --openclaw` instead):

                  $ lanbridge nodes approve 7c01d4aa --fingerprint 0b9635

                Without --code (or --fingerprint) at a terminal, it asks for it. --json does not skip the check.

                A request marked KEY CHANGED looks like a paired device under a new key (a reinstalled app, a new phone with the old name, or someone posing as it). Check with its owner, then say which it is: --replace makes the new key take the old one's place (the old key is revoked in the same step and its rules carry over), --add keeps both as two devices. At a terminal it asks; otherwise it refuses and changes nothing.
                """)
        @OptionGroup var state: StateOptions
        @Argument(help: "The request ID from `lanbridge nodes pending`.") var requestId: String
        @Option(help: "The 6-digit code the device shows; must match.") var code: String?
        @Option(help: ArgumentHelp("One of OpenClaw's apps: the first 6 characters of the certificate fingerprint it shows; must match.", valueName: "hex"))
        var fingerprint: String?
        @Flag(help: "Approve without comparing the code (a man in the middle would pass).") var unverified = false
        @Flag(help: "Grant more than display (--allow, --ask, …) to a browser on an unverified page (browser-unverified): whoever served that page may hold its key.")
        var unverifiedPage = false
        @Flag(help: "KEY CHANGED: the new key replaces the paired device of that name (revoked; its rules carry over).") var replace = false
        @Flag(help: "KEY CHANGED: pair the new key as a second device beside the one of that name.") var add = false
        @OptionGroup var grant: GrantOptions
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if let code, code.count != 6 || !code.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw ValidationError("--code takes the 6 digits the device shows, e.g. --code 048213")
            }
            if let fingerprint, fingerprint.count != 6 || !fingerprint.allSatisfy({ $0.isHexDigit }) {
                throw ValidationError("--fingerprint takes the first 6 characters of the fingerprint the app shows, e.g. --fingerprint 0b9635")
            }
            if code != nil && fingerprint != nil { throw ValidationError("--code is for a device that shows a code, --fingerprint for one of OpenClaw's apps: give one") }
            if (code != nil || fingerprint != nil) && unverified { throw ValidationError("--code (or --fingerprint) and --unverified exclude each other") }
            if replace && add { throw ValidationError("--replace and --add exclude each other: the new key takes the old one's place, or it is a second device") }
        }

        func run() throws {
            try Output.run {
                let settings = try state.settings()
                let store = PairingStore(directory: state.directory)
                // The patterns are checked (against the request's declared commands too) before anything is written.
                let request = try store.read().request(requestId)
                // What the device shows, compared by the store: its code, or for OpenClaw's apps the
                // start of the certificate fingerprint. Asked for at a terminal; never skipped but by --unverified.
                let app = request?.openClawApp != nil
                if app, code != nil {
                    throw ValidationError("\(requestId) is one of OpenClaw's apps, which shows no code: pass --fingerprint with the first 6 characters of the fingerprint it shows")
                }
                if !app, fingerprint != nil { throw ValidationError("\(requestId) is not one of OpenClaw's apps: pass --code with the 6 digits the device shows") }
                var shown = app ? fingerprint?.lowercased() : code
                if shown == nil, !unverified {
                    guard let typed = Prompt.ask(app ? "The first 6 characters of the certificate fingerprint the app shows: " : "The 6-digit code the device shows: ") else {
                        throw ValidationError(
                            app
                                ? "give --fingerprint with the first 6 characters of the fingerprint the app shows (or --unverified to skip the comparison, at the risk it names)"
                                : "give --code with the code the device shows (or --unverified to skip the comparison, at the risk it names)")
                    }
                    shown = app ? typed.lowercased() : typed
                }
                let declared = request?.details.commands ?? []
                let grant = try grant.grant(settings.catalog, declared: declared)
                var keyChange: KeyChangeChoice? = replace ? .replace : add ? .add : nil
                if keyChange == nil, let request, let previous = try store.read().keyChange(for: request) {
                    let answer = Prompt.ask(
                        "KEY CHANGED: this looks like the paired \(previous.details.displayName) (\(previous.nodeId)) under a new key. Replace it (its key revoked, its rules kept) or add a second device? [replace/add]: "
                    )
                    keyChange = answer.flatMap { KeyChangeChoice(rawValue: $0.lowercased()) }
                    if answer != nil, keyChange == nil { throw ValidationError("answer replace or add") }
                }
                let previous = request.flatMap { try? store.read().keyChange(for: $0) }
                let node = try store.approve(
                    requestId, code: shown, unverified: unverified, grant: grant, settings: settings, keyChange: keyChange, unverifiedPage: unverifiedPage)
                try DaemonConfirmation.confirm(state, "the pairing of \(node.details.displayName)")
                if json { return try Output.json(GrantedNode(node: node)) }
                print("Approved \(node.details.displayName) (\(node.nodeId))\(unverified ? " WITHOUT comparing codes" : "").")
                if let previous, keyChange == .replace { print("It replaces \(previous.nodeId), whose key is revoked; its rules carried over.") }
                GrantReport(node: node).print()
            }
        }
    }

    struct Reject: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reject a pairing request, or every request from one address.",
            discussion: "`lanbridge nodes reject --from 192.168.1.77 --block` clears a flood of requests from one machine at once.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The request ID from `lanbridge nodes pending`.") var requestId: String?
        @Option(help: "Reject every pending request from this source address instead.") var from: String?
        @Flag(help: "Also ignore these devices' keys from now on (undo with `nodes unblock`).") var block = false
        @Flag(help: "Print JSON.") var json = false

        struct Report: Encodable { let rejected: [String]; let blocked: Bool }

        func validate() throws {
            guard (requestId == nil) != (from == nil) else { throw ValidationError("give a request ID or --from ADDRESS (one of them)") }
        }

        func run() throws {
            try Output.run {
                let store = PairingStore(directory: state.directory)
                if let from {
                    let rejected = try store.update { $0.reject(from: from, block: block, now: Date()) }
                    guard !rejected.isEmpty else { throw PairingError.unknownRequest("from \(from)") }
                    if json { return try Output.json(Report(rejected: rejected.map(\.requestId), blocked: block)) }
                    print("Rejected \(rejected.count) request(s) from \(from)\(block ? " and blocked their keys" : "").")
                } else if let requestId {
                    let request = try store.update { try $0.reject(requestId: requestId, block: block, now: Date()) }
                    if json { return try Output.json(Report(rejected: [request.requestId], blocked: block)) }
                    print("Rejected \(request.details.displayName) (\(request.nodeId))\(block ? " and blocked its key" : "").")
                }
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show paired devices.",
            discussion:
                "Connection and foreground state come from the running daemon; without one every node shows as offline. --json prints the same node objects as `nodes describe --json` and the gateway's node.list."
        )
        @OptionGroup var state: StateOptions
        @Flag(help: "Only nodes connected now.") var connected = false
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let settings = try state.settings()
                let current = try PairingStore(directory: state.directory).read()
                let runtime = RuntimeStatusFile(directory: state.directory).read()
                let rows = current.paired.nodes.map { NodeDescription($0, live: runtime?.nodes[$0.nodeId.description], policy: settings.policy, now: Date()) }
                    .filter { !connected || $0.connected }
                if json { return try Output.json(rows) }
                guard !rows.isEmpty else {
                    return print(connected ? "No node is connected." : "No paired nodes. Pair one with `lanbridge nodes pending` or `lanbridge invite`.")
                }
                if runtime == nil { Output.note("(the daemon is not running: connection state unknown)") }
                Output.table(
                    ["NODE ID", "NAME", "PLATFORM", "STATE", "LAST SEEN", "ALLOWED"],
                    rows.map {
                        [
                            $0.nodeId, $0.displayName, $0.platform + ($0.openClawApp == nil ? "" : " via \($0.openClawApp?.clientId ?? "openclaw-app")"),
                            $0.connected ? ($0.foreground == false ? "connected, background" : "connected") : "offline",
                            $0.connected ? "now" : Output.duration(Date().timeIntervalSince($0.lastSeen)) + " ago",
                            $0.access.allow.isEmpty ? "-" : $0.access.allow.joined(separator: ","),
                        ]
                    })
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a pairing; a connected device is dropped at once.")
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name, from `lanbridge nodes list`.") var node: String
        @Flag(help: "Also ignore the device's key from now on: it cannot ask to pair again until `nodes unblock`.") var block = false
        @Flag(help: "Print JSON.") var json = false

        /// What `--json` prints: the revoked node's record, and with the OpenClaw gateway protocol
        /// what the gateway keeps of it and how its operator removes that.
        struct Revoked: Encodable {
            let node: PairedNode
            let gatewayDeviceId: String?
            let gatewayCleanup: String?
            enum Keys: String, CodingKey { case gatewayDeviceId, gatewayCleanup }
            func encode(to encoder: any Encoder) throws {
                try node.encode(to: encoder)
                var extra = encoder.container(keyedBy: Keys.self)
                try extra.encodeIfPresent(gatewayDeviceId, forKey: .gatewayDeviceId)
                try extra.encodeIfPresent(gatewayCleanup, forKey: .gatewayCleanup)
            }
        }

        func run() throws {
            try Output.run {
                // Read first: the daemon forgets the node's gateway identity once the pairing is gone.
                let devices = RuntimeStatusFile(directory: state.directory).read()?.openClawDevices
                let removed = try PairingStore(directory: state.directory).update { try $0.revoke(matching: node, block: block, now: Date()) }
                try DaemonConfirmation.confirm(state, "the revocation of \(removed.details.displayName)")
                let device = devices?[removed.nodeId.description]
                let cleanup = device.map { OpenClawCommands.cleanup(deviceId: $0) }
                if json { return try Output.json(Revoked(node: removed, gatewayDeviceId: device, gatewayCleanup: cleanup)) }
                print("Revoked \(removed.details.displayName) (\(removed.nodeId))\(block ? " and blocked its key" : "").")
                if let device { print(OpenClawCommands.keptNotice(deviceId: device)) }
            }
        }
    }

    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a paired device another display name.",
            discussion: "  $ lanbridge nodes rename 7K2M-9QXD-3HJA-PW4T \"Kitchen tablet\"")
        @OptionGroup var state: StateOptions
        @Argument(help: "Node ID or display name.") var node: String
        @Argument(help: "The new display name (control characters are removed, 64 characters at most).") var name: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let settings = try state.settings()
                let renamed = try PairingStore(directory: state.directory).update { try $0.rename(node, to: name) }
                try DaemonConfirmation.confirm(state, "the new name of \(renamed.nodeId)")
                let live = RuntimeStatusFile(directory: state.directory).read()?.nodes[renamed.nodeId.description]
                if json { return try Output.json(NodeDescription(renamed, live: live, policy: settings.policy, now: Date())) }
                print("Renamed \(renamed.nodeId) to \(renamed.details.displayName).")
            }
        }
    }

    struct Unblock: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Undo `nodes reject --block`: the device may ask to pair again.")
        @OptionGroup var state: StateOptions
        @Argument(help: "The blocked device's node ID or display name.") var node: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try Output.run {
                let key = try PairingStore(directory: state.directory).update { try $0.unblock(node) }
                try DaemonConfirmation.confirm(state, "the unblocking of \(key.displayName)")
                if json { return try Output.json(key) }
                print("Unblocked \(key.displayName) (\(key.nodeId)); it may ask to pair again.")
            }
        }
    }
}
