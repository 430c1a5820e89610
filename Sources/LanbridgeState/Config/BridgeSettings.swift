import FoundationEssentials
import LanbridgeProtocol

/// The operator's config file (`config.json` in the state directory, or `--config`): gateway link,
/// access-rule defaults and limits. Every entry is checked when it is loaded; an unknown key, an
/// unknown command or a bad pattern is an error that names the entry, so a rule can never silently
/// fail to apply. Both `lanbridge serve` and `nodes approve` read it.
public struct BridgeSettings: Sendable {
    public static let fileName = StateFormat.File.config.rawValue
    public static let platforms = ["ios", "android", "macos", "linux"]

    public struct Gateway: Sendable, Equatable {
        public var url = "ws://127.0.0.1:18789"
        /// A file (mode 0600) holding the token; `LANBRIDGE_GATEWAY_TOKEN` wins over it.
        public var tokenFile: String?
        public var allowRemote = false
        public var enabled = true
        /// PEM trust roots for a wss:// gateway (default: the system's).
        public var caFile: String?
        /// "proof" (the token is proved, never sent) or "bearer" (sent, for gateways that cannot).
        public var auth = "proof"
        /// Users (names or uids) who may own the gateway's socket; empty: root and the daemon's user.
        public var owners: [String] = []
        /// What the gateway speaks: "lanbridge" (PROTOCOL.md §12, one link) or "openclaw" (one
        /// role-node socket per connected node, as OpenClaw's gateway expects).
        public var wire = "lanbridge"
        public static let wires = ["lanbridge", "openclaw"]
    }

    /// The numbers in `limits` (`Limit` is the table: keys, defaults, ranges, what each bounds),
    /// and the snapshot commands' list.
    public struct Limits: Sendable, Equatable {
        public var values = LimitValues(.limits)
        public var snapshotCommands = ["canvas.snapshot", "screen.snapshot", "camera.snap"]

        public subscript(_ limit: Limit) -> Int {
            get { values[limit] }
            set { values[limit] = newValue }
        }

        /// A limit in milliseconds, as seconds (the one conversion).
        public func seconds(_ limit: Limit) -> Double { Double(values[limit]) / 1000 }

        /// The largest message a paired node's session carries: room past `maxResultBytes`, so an
        /// oversized result is answered PAYLOAD_TOO_LARGE instead of dropping the node.
        public var sessionMessageBytes: Int { self[.maxResultBytes] * 2 }
        /// The largest frame on a gateway socket (a result, spliced into a response, and its envelope).
        public var gatewayMessageBytes: Int { self[.maxResultBytes] * 2 + (1 << 20) }

        /// `new` with this one's size limits: the transports' message caps are fixed when they
        /// start, so a reload applies every other limit and no size limit (a raised result limit
        /// that reached the core but not the transport closed the node's session instead of
        /// answering PAYLOAD_TOO_LARGE). Returns what was kept, for the log.
        public func reloaded(to new: Limits) -> (limits: Limits, kept: [String]) {
            var applied = new
            var kept: [String] = []
            for limit in Limit.in(.limits) where limit.spec.restartOnly && new[limit] != self[limit] {
                applied[limit] = self[limit]
                kept.append(limit.rawValue)
            }
            return (applied, kept)
        }
    }

    /// The front door for OpenClaw's own apps (`openclawApps` in config.json): off by default.
    public struct OpenClawApps: Sendable, Equatable {
        public static let defaultPort = 18794
        public var enabled = false
        /// As `canvas.listen`: `PORT`, `:PORT` or `HOST:PORT`.
        public var listen: String?
        /// Plain `ws://` instead of `wss://` (Android only; never on a public address).
        public var plainWebSocket = false
        public init() {}
    }

    /// The browser door (`browser` in config.json, issue 64): off by default; it needs the bridge
    /// CA (`lanbridge ca init`).
    public struct Browser: Sendable, Equatable {
        public static let defaultPort = 18795
        public var enabled = false
        /// As `canvas.listen`: `PORT`, `:PORT` or `HOST:PORT`.
        public var listen: String?
        /// Which certificate the page is served with, and so what a pairing through it is worth.
        public var tls = TLS.bridgeCA
        /// The names (and IPv4 addresses) phones use for the door; empty: the certificate's own.
        public var names: [String] = []
        public init() {}

        public enum TLS: Sendable, Equatable {
            /// Tier 1: leaves the daemon issues from `lanbridge ca init`'s intermediate.
            case bridgeCA
            /// Tier 2: the admin's own certificate (certbot DNS-01, `tailscale cert`, Caddy), reloaded on change.
            case files(certificate: String, key: String)
            /// Tier 3: a self-signed certificate the user clicks through. Its pairings are labelled
            /// `browser-unverified`: code only, no invites, display-only grants by default.
            case selfSigned
        }
    }

    /// The canvas relay (`canvas` in config.json): the gateway's canvas and A2UI pages for paired
    /// nodes, over HTTPS on the LAN listeners, and the policy for what a canvas may load.
    public struct Canvas: Sendable, Equatable {
        public static let defaultPort = 18793
        /// `--no-canvas`, or `enabled: false`.
        public var enabled = true
        /// `PORT` (or `:PORT`): the relay on each of the bridge's listen addresses at that port;
        /// `HOST:PORT`: on that address only. Nil: `:18793`, and if that is taken, no relay.
        public var listen: String?
        /// In §12 mode, the canvas host behind the relay: `http://127.0.0.1:PORT` or
        /// `unix:/path`. In `openclaw` mode the gateway's own canvas host is used.
        public var upstream: String?
        /// Origins every canvas may (or may not) load, beyond (or against) the defaults.
        public var allowOrigins: [OriginPattern] = []
        public var denyOrigins: [OriginPattern] = []
        /// How long a minted capability lasts without use; each use extends it (as upstream's).
        public var capabilityTTLMs = Limit.capabilityTTLMs.defaultValue

        public var urlPolicy: CanvasURLPolicy { CanvasURLPolicy(allow: allowOrigins, deny: denyOrigins) }
    }

    /// Connection admission before any cryptography, per source address and overall (the
    /// numbers in `admission`; `Limit` is the table).
    public struct Admission: Sendable, Equatable {
        public var values = LimitValues(.admission)
        public subscript(_ limit: Limit) -> Int {
            get { values[limit] }
            set { values[limit] = newValue }
        }
        public init() {}
    }

    /// The monitoring endpoint (`/metrics`, `/healthz`): off unless `listen` is set.
    public struct Metrics: Sendable, Equatable {
        public var listen: ListenAddress?
        public var allowRemote = false
    }

    /// The approval console (`ui` in config.json): on by default, on loopback.
    public struct Console: Sendable, Equatable {
        public static let defaultListen = "127.0.0.1:18791"
        public var enabled = true
        /// Nil: `defaultListen`.
        public var listen: ListenAddress?
        public var allowRemote = false
    }

    /// The operator's wake hook (`wake` in config.json): run when an invoke is held for a node that
    /// is in the background or away (PROTOCOL.md §12.3), with the node's push registration on stdin.
    /// An operator's hook (`wake`, `notify`): a program run with one JSON document on stdin.
    public struct Hook: Sendable, Equatable {
        /// An absolute path to an executable; nil: no hook.
        public var exec: String?
        /// Passed as they are (no shell).
        public var args: [String] = []
        /// How long one run may take before it is killed.
        public var timeoutMs = Limit.wakeTimeoutMs.defaultValue  // the notify hook's is the same (the `Limit` table)
        public init() {}
    }

    /// The notify hook (`notify`): run when an invoke starts waiting for the operator's answer.
    public struct Notify: Sendable, Equatable {
        public var hook = Hook()
        /// The user whose browser may open the hook's console link (a one-time login, as
        /// `lanbridge ui` gives); nil: the document has no link.
        public var consoleUid: UInt32?
        public init() {}
    }

    /// Where `serve` listens (`listen` in config.json): `lan`, `loopback`, addresses or interface
    /// names; empty: `--listen`, else `lan`.
    public var listen: [String] = []
    /// Addresses devices should dial ("host" or "host:port"), in order of preference, for invites
    /// and the welcome list; empty: derived from the listeners and this host's interfaces.
    public var addresses: [String] = []
    public static let maxAddresses = 4

    public var gateway = Gateway()
    public var metrics = Metrics()
    public var console = Console()
    public var limits = Limits()
    public var admission = Admission()
    public var wake = Hook()
    public var notify = Notify()
    public var canvas = Canvas()
    public var openClawApps = OpenClawApps()
    public var browser = Browser()
    public var extraCommands: [String] = []
    /// Per platform ("*" for all): patterns added to, and removed from, the built-in defaults.
    public var defaultsAdd: [String: [String]] = [:]
    public var defaultsRemove: [String: [String]] = [:]
    /// Per platform ("*" for all): patterns asked each time (`access.defaults.P.ask`).
    public var defaultsAsk: [String: [String]] = [:]
    /// Per platform: what a new pairing does with the sensitive commands it declares (`access.defaults.P.sensitive`).
    public var defaultsSensitive: [String: AccessRules.SensitiveChoice] = [:]
    public var policy = AccessPolicy()

    public init() {}

    public var catalog: CommandCatalog { CommandCatalog(extra: extraCommands) }

    /// What a newly paired node may run: the built-in platform defaults, plus the config's
    /// additions; a removal not in the list becomes a deny rule (removing `canvas.eval` from `canvas.*`).
    /// With `declared`, the sensitive ones among them are granted or asked as `sensitive` says.
    public func defaultRules(forPlatform platform: String, declared: [String] = []) -> AccessRules {
        var rules = AccessRules.defaults(forPlatform: platform)
        let key = platform.lowercased()
        for pattern in (defaultsAdd["*"] ?? []) + (defaultsAdd[key] ?? []) where !rules.allow.contains(pattern) {
            rules.allow.append(pattern)
        }
        for pattern in (defaultsRemove["*"] ?? []) + (defaultsRemove[key] ?? []) {
            if let index = rules.allow.firstIndex(of: pattern) { rules.allow.remove(at: index) } else if !rules.deny.contains(pattern) { rules.deny.append(pattern) }
        }
        for pattern in (defaultsAsk["*"] ?? []) + (defaultsAsk[key] ?? []) where !rules.ask.contains(pattern) { rules.ask.append(pattern) }
        rules.take(sensitiveIn: declared, defaultsSensitive[key] ?? defaultsSensitive["*"] ?? .withhold)
        return rules
    }
}

extension BridgeSettings {
    /// A key of the `Limit` table as these settings hold it (nil: derived, and not set).
    public func value(of limit: Limit) -> Int? {
        switch limit.spec.section {
        case .limits: limits.values.value(limit)
        case .admission: admission.values.value(limit)
        case .canvas: canvas.capabilityTTLMs
        case .access: policy.backgroundRetryAfterMs
        case .wake: wake.timeoutMs
        case .notify: notify.hook.timeoutMs
        }
    }
}
