import ArgumentParser
import FoundationEssentials
import LanbridgeDiscovery
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check what nodes need to find and reach this bridge.",
        discussion:
            "Checks the state directory's privacy, the identity, the config file, avahi-daemon, and (when `lanbridge serve` runs) the addresses it listens on, the name it is advertised under and the gateway link. Exits 1 if anything needs fixing; a WARN (a sensitive command an old default granted) wants a decision but does not change the exit code."
    )

    @OptionGroup var state: StateOptions
    @Flag(help: "Print JSON.") var json = false

    struct Check: Encodable {
        let name: String
        let ok: Bool
        let detail: String
        let fix: String?
        /// Works, but wants the operator's decision (WARN; the exit code stays 0).
        var warning: Bool? = nil
    }

    func run() throws {
        let directory = state.directory
        var checks: [Check] = []
        if !FileManager.default.fileExists(atPath: directory.url.path) {
            checks.append(Check(name: "state directory", ok: true, detail: "\(directory.url.path) will be created (mode 0700) on first use", fix: nil))
        } else if let problem = directory.privacyProblem() {
            checks.append(
                Check(name: "state directory", ok: false, detail: "\(directory.url.path): \(problem)", fix: "chmod 700 \(directory.url.path) (or 770 to share it with its group)"))
        } else {
            checks.append(Check(name: "state directory", ok: true, detail: "\(directory.url.path) is \(directory.sharingDescription)", fix: nil))
        }
        do {
            let key = try IdentityStore(directory: directory).publicKey(creating: false)
            checks.append(Check(name: "identity", ok: true, detail: "fingerprint \(Fingerprint(publicKey: key))", fix: nil))
        } catch is IdentityStore.NoIdentityYet {
            checks.append(Check(name: "identity", ok: true, detail: "none yet; created on first `lanbridge serve`", fix: nil))
        } catch {
            checks.append(Check(name: "identity", ok: false, detail: "\(error)", fix: nil))
        }
        // The store as the daemon would load it: a corrupt file stops `serve` (exit 65).
        if FileManager.default.fileExists(atPath: directory.url.path) {
            do {
                let current = try PairingStore(directory: directory).read()
                checks.append(Check(name: "store", ok: true, detail: "\(current.paired.nodes.count) paired, \(current.pending.requests.count) pending", fix: nil))
                for node in current.paired.nodes where !node.grantedByOldDefault.isEmpty {
                    checks.append(
                        Check(
                            name: "grants of \(node.nodeId)", ok: true,
                            detail: "\(node.details.displayName) holds \(node.grantedByOldDefault.joined(separator: ", ")), granted by an old default, not on purpose",
                            fix: "keep: lanbridge nodes allow \(node.nodeId) --confirm-defaults; or take away: lanbridge nodes deny \(node.nodeId) COMMAND",
                            warning: true))
                }
            } catch {
                checks.append(Check(name: "store", ok: false, detail: "\(error)", fix: "repair the named file or move it aside; `lanbridge serve` will not start until then"))
            }
        }
        let runtime = RuntimeStatusFile(directory: directory).read()
        // A daemon started with --no-mdns does not need avahi-daemon: judge the daemon as configured.
        if runtime?.mdns == "off" {
            checks.append(Check(name: "avahi-daemon", ok: true, detail: "not needed: the daemon runs with --no-mdns", fix: nil))
        } else {
            switch AvahiProbe.check() {
            case let .success(version):
                checks.append(Check(name: "avahi-daemon", ok: true, detail: "reachable (\(version))", fix: nil))
            case let .failure(error):
                checks.append(
                    Check(
                        name: "avahi-daemon", ok: false, detail: "\(error): nodes cannot discover the bridge (they can still connect by address)",
                        fix: "apt-get install avahi-daemon && systemctl enable --now avahi-daemon"))
            }
        }
        do {
            _ = try state.settings()
            checks.append(Check(name: "config", ok: true, detail: "access rules and limits check out", fix: nil))
        } catch {
            checks.append(
                Check(
                    name: "config", ok: false, detail: "\(error)",
                    fix: "correct the named entry; every key is in lanbridge-config(5) (man lanbridge-config), and `lanbridge config show` prints what is in effect"))
        }
        if let runtime {
            checks.append(
                Check(name: "daemon", ok: true, detail: "lanbridge serve is running (pid \(runtime.pid)), listening on \(runtime.listening.joined(separator: ", "))", fix: nil))
            let published = runtime.mdns == "published"
            checks.append(
                Check(
                    name: "mDNS", ok: published || runtime.mdns == "off",
                    detail: published ? "advertised as \"\(runtime.mdnsName ?? "?")\" (_lanbridge._tcp)" : "advertising: \(runtime.mdns ?? "unknown")",
                    fix: published || runtime.mdns == "off" ? nil : "see the avahi-daemon check"))
            let link = runtime.gateway ?? "unknown"
            if link.hasPrefix("openclaw") {
                // One socket per connected node: each is a check of its own.
                checks.append(Check(name: "gateway", ok: true, detail: link, fix: nil))
                for (node, live) in runtime.nodes.sorted(by: { $0.key < $1.key }) {
                    let session = live.gatewaySession ?? "not started"
                    let device = live.gatewayDeviceId.map { " (device \($0.prefix(16))…)" } ?? ""
                    if let approval = live.gatewayApproval {
                        // The gateway's own approval, its operator's to give: a decision, not a fault.
                        checks.append(
                            Check(
                                name: "gateway session \(node)", ok: true, detail: "\(approval.summary)\(device)",
                                fix: "on the gateway's host: \(approval.kind == .commands ? "openclaw nodes pending, then " : "")\(approval.approveWith)",
                                warning: true))
                        continue
                    }
                    let up = session.hasPrefix("connected")
                    checks.append(
                        Check(
                            name: "gateway session \(node)", ok: up, detail: "\(session)\(device)",
                            fix: up ? nil : "is the OpenClaw gateway running, and does it accept the token (gateway.tokenFile)?"))
                }
            } else {
                let linked = link.hasPrefix("connected") || link == "off"
                checks.append(
                    Check(
                        name: "gateway link", ok: linked, detail: link,
                        fix: linked
                            ? nil
                            : "the detail says why; once fixed (the gateway started, the token in LANBRIDGE_GATEWAY_TOKEN or --gateway-token-file), `lanbridge gateway reconnect` tries at once"
                    ))
            }
            // The agent's canvas: with an OpenClaw gateway there is a canvas host, so no relay is a
            // canvas nodes cannot load (a taken default port turns it off with only a warning).
            let settings = try? state.settings()
            if let canvas = runtime.canvas {
                checks.append(
                    Check(
                        name: "canvas relay", ok: true,
                        detail: "https://\(canvas.listening.joined(separator: ", https://")) from \(canvas.upstream), certificate sha256 \(canvas.tlsSha256)", fix: nil))
            } else if link.hasPrefix("openclaw"), settings?.canvas.enabled != false {
                checks.append(
                    Check(
                        name: "canvas relay", ok: true, detail: "off: nodes cannot load the agent's canvas pages",
                        fix: "see the daemon's log (\"canvas relay off\"): choose a free port with canvas.listen or --canvas-listen", warning: true))
            }
            if let apps = runtime.openClawApps {
                checks.append(Check(name: "OpenClaw's apps", ok: true, detail: "their door is open at \(apps.joined(separator: ", "))", fix: nil))
            }
            if let pages = runtime.browser {
                let unverified = settings?.browser.tls == .selfSigned
                checks.append(
                    Check(
                        name: "browser door", ok: true,
                        detail: "\(pages.joined(separator: ", "))"
                            + (unverified
                                ? ": a self-signed page, its pairings browser-unverified"
                                : settings?.browser.tls == .bridgeCA
                                    ? ": phones install the bridge CA's root first (the same port over http://, or lanbridge ca export), its SHA-256 compared with lanbridge ca show"
                                    : ""),
                        fix: unverified ? "the bridge CA (lanbridge ca init, and browser.tls \"ca\") or your own certificate lets phones check the page" : nil,
                        warning: unverified))
            }
        } else {
            checks.append(Check(name: "daemon", ok: true, detail: "lanbridge serve is not running (start it: lanbridge serve)", fix: nil))
        }
        if json {
            try Output.json(checks)
        } else {
            for check in checks {
                print("\(!check.ok ? "FAIL" : check.warning == true ? "WARN" : "ok  ") \(check.name): \(check.detail)")
                if let fix = check.fix, !check.ok || check.warning == true { print("     fix: \(fix)") }
            }
        }
        if checks.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }
}
