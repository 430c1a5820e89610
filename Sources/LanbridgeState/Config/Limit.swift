/// Every number an operator may set in `limits` and `admission` (config.json), once: its key, its
/// default, the values it may take, its unit and what it bounds. The settings (`Limits`,
/// `Admission`), the loader, the keys an unknown one is told of, `lanbridge config show`, the
/// configuration's man page and README's table all read this one table (issue 49 §4); a test fails
/// when README's table differs from it.
public enum Limit: String, CaseIterable, Sendable, Hashable {
    // limits: what a node and the gateway may do
    case maxResultBytes, maxConcurrentInvokes, defaultTimeoutMs, maxTimeoutMs, nodeQueueBytes
    case agentPerMinute, systemEventsPerMinute, snapshotsPerMinute
    case eventsPerMinute, eventBytesPerMinute, maxEventBytes, statesPerMinute
    case maxHoldMs, heldPerNode, heldTotal, heldBytes
    // limits: the canvas relay
    case canvasMaxResponseBytes, canvasMaxHeaderBytes, canvasConnectionsPerNode, canvasConnections
    case canvasRequestsPerMinute, canvasHeadMs, canvasIdleMs, canvasRequestMs, canvasKeepAliveMs
    // limits: each node's socket at an OpenClaw gateway (`gateway.protocol: "openclaw"`)
    case openClawConnecting, openClawRedialMinMs, openClawRedialMaxMs, openClawDeviceRetryMs
    case openClawEventWaitMs, openClawWaitingEvents, openClawCanvasWaitMs
    // limits: the link to a lanbridge gateway (`gateway.protocol: "lanbridge"`)
    case gatewayRedialMinMs, gatewayRedialMaxMs
    // limits: the activity feed (`lanbridge activity`)
    case activityRecords
    // limits: invokes an ask rule holds for the operator's answer (`lanbridge invokes pending`)
    case askPerNode, askTotal, askTimeoutMs
    // admission: connections before they prove a key
    case maxUnauthenticated, maxUnauthenticatedPerAddress, maxUnauthenticatedPerListener, maxWaiting
    case attemptsPerWindow, windowSeconds, lockoutSeconds, unpairedDeadlineSeconds
    // one key each in other sections: the canvas, access, and the two hooks
    case capabilityTTLMs, backgroundRetryAfterMs, wakeTimeoutMs, notifyTimeoutMs

    public enum Section: String, Sendable { case limits, admission, canvas, access, wake, notify }

    /// The key under its section in config.json (the hooks' are both `timeoutMs`).
    public var key: String {
        switch self {
        case .wakeTimeoutMs, .notifyTimeoutMs: "timeoutMs"
        default: rawValue
        }
    }

    /// `section.key`, as README, the man page and `config show` write it.
    public var path: String { "\(spec.section.rawValue).\(key)" }

    /// The default, for a key that has one (every key but the derived `maxUnauthenticatedPerListener`).
    public var defaultValue: Int { spec.defaultValue ?? 0 }

    /// Keys a config.json may still hold from an older lanbridge that no longer bound anything:
    /// accepted and ignored (an unknown key is an error), with why.
    public static let retired: [String: String] = [
        "openClawReofferMinMs": "lanbridge no longer re-offers a node's commands to pick up an OpenClaw gateway's approvals",
        "openClawReofferMaxMs": "lanbridge no longer re-offers a node's commands to pick up an OpenClaw gateway's approvals",
    ]

    public struct Spec: Sendable {
        public let section: Section
        /// nil: derived when not set (`maxUnauthenticatedPerListener`).
        public let defaultValue: Int?
        public let range: ClosedRange<Int>
        public let unit: String
        public let doc: String
        /// The transports were sized by it when they started: a reload keeps the running value.
        public let restartOnly: Bool

        init(_ section: Section, _ defaultValue: Int?, _ range: ClosedRange<Int>, _ unit: String, _ doc: String, restartOnly: Bool = false) {
            (self.section, self.defaultValue, self.range, self.unit, self.doc, self.restartOnly) = (section, defaultValue, range, unit, doc, restartOnly)
        }
    }

    /// The table.
    public var spec: Spec {
        switch self {
        case .maxResultBytes:
            Spec(
                .limits, 8 << 20, 1024...(64 << 20), "bytes",
                "the largest invoke result relayed (bigger: PAYLOAD_TOO_LARGE); every message size the transports allow derives from it",
                restartOnly: true)
        case .maxConcurrentInvokes: Spec(.limits, 8, 1...1024, "invokes", "invokes in flight per node (more: RATE_LIMITED)")
        case .nodeQueueBytes:
            Spec(
                .limits, 4 << 20, 64 << 10...(256 << 20), "bytes",
                "bytes waiting for one node that does not read them (more: NODE_BACKLOGGED, retryable); 4 MiB holds a few large invokes for a node that is slow, not one that froze"
            )
        case .defaultTimeoutMs: Spec(.limits, 30_000, 100...3_600_000, "ms", "an invoke's timeout when it names none")
        case .maxTimeoutMs: Spec(.limits, 300_000, 100...3_600_000, "ms", "the longest timeout an invoke may ask for")
        case .agentPerMinute: Spec(.limits, 30, 1...100_000, "per minute", "agent calls a node may forward to the gateway")
        case .systemEventsPerMinute: Spec(.limits, 120, 1...100_000, "per minute", "system-event beacons per node")
        case .snapshotsPerMinute: Spec(.limits, 30, 1...100_000, "per minute", "snapshot commands per node (a burst of a fifth of it)")
        case .eventsPerMinute: Spec(.limits, 120, 1...100_000, "per minute", "a node's own events (more are dropped and counted)")
        case .eventBytesPerMinute: Spec(.limits, 1 << 20, 1024...(64 << 20), "bytes a minute", "a node's own events, in bytes")
        case .maxEventBytes: Spec(.limits, 64 << 10, 256...(1 << 20), "bytes", "the largest event a node may send")
        case .statesPerMinute: Spec(.limits, 60, 1...100_000, "per minute", "foreground changes announced at once (more are coalesced)")
        case .maxHoldMs: Spec(.limits, 600_000, 1000...86_400_000, "ms", "the longest an invoke may wait for its node (hold)")
        case .heldPerNode: Spec(.limits, 16, 0...1024, "invokes", "invokes waiting for one node")
        case .heldTotal: Spec(.limits, 256, 0...65_536, "invokes", "invokes waiting in all")
        case .heldBytes: Spec(.limits, 4 << 20, 0...(256 << 20), "bytes", "parameters of waiting invokes, in all")
        case .askPerNode: Spec(.limits, 8, 0...256, "invokes", "invokes waiting for the operator's answer, per node")
        case .askTotal: Spec(.limits, 64, 0...4096, "invokes", "invokes waiting for the operator's answer, in all")
        case .askTimeoutMs: Spec(.limits, 60_000, 1000...3_600_000, "ms", "how long an asked invoke waits for the answer")
        case .canvasMaxResponseBytes: Spec(.limits, 64 << 20, 1024...(1 << 30), "bytes", "the largest response the canvas relay passes on")
        case .canvasMaxHeaderBytes: Spec(.limits, 16 << 10, 1024...(256 << 10), "bytes", "the largest request head the relay reads")
        case .canvasConnectionsPerNode: Spec(.limits, 16, 1...1024, "connections", "relay connections per node")
        case .canvasConnections:
            Spec(
                .limits, 256, 1...65_536, "connections",
                "relay connections in all (those without a live capability yet go first, oldest first, when it is full)")
        case .canvasRequestsPerMinute: Spec(.limits, 600, 1...1_000_000, "per minute", "relay requests per node")
        case .canvasHeadMs: Spec(.limits, 10_000, 100...600_000, "ms", "for a request head to arrive (slowloris)")
        case .canvasIdleMs: Spec(.limits, 60_000, 100...3_600_000, "ms", "a relay connection's silence (not a live-reload socket's)")
        case .canvasRequestMs: Spec(.limits, 600_000, 1000...86_400_000, "ms", "one relayed response, in all")
        case .canvasKeepAliveMs:
            Spec(.limits, 5_000, 0...600_000, "ms", "a kept relay connection's wait for its next request head; 0: one request a connection")
        case .openClawConnecting:
            Spec(
                .limits, 4, 1...32, "sockets",
                "node sockets in their handshake with the OpenClaw gateway at once (it allows 32 unauthenticated per address)",
                restartOnly: true)
        case .openClawRedialMinMs:
            Spec(
                .limits, 500, 100...60_000, "ms", "the first wait before a node's OpenClaw socket redials (doubling, with jitter)",
                restartOnly: true)
        case .openClawRedialMaxMs:
            Spec(
                .limits, 30_000, 1000...600_000, "ms", "the longest such wait; also the wait after a refusal only its operator can fix",
                restartOnly: true)
        case .gatewayRedialMinMs:
            Spec(
                .limits, 250, 100...60_000, "ms", "the first wait before the gateway link dials again (doubling; `lanbridge gateway reconnect` skips it)",
                restartOnly: true)
        case .activityRecords:
            Spec(.limits, 10_000, 0...1_000_000, "records", "invokes the activity feed remembers (the oldest go first); 0 turns the feed off", restartOnly: true)
        case .gatewayRedialMaxMs:
            Spec(.limits, 30_000, 1000...600_000, "ms", "the longest wait between the gateway link's dials", restartOnly: true)
        case .openClawDeviceRetryMs:
            Spec(
                .limits, 10_000, 1000...600_000, "ms",
                "how often the gateway is asked again while it holds a node's device for its operator", restartOnly: true)
        case .openClawEventWaitMs:
            Spec(
                .limits, 5000, 100...60_000, "ms", "how long a node's call waits for its socket while that reconnects (then UNAVAILABLE)",
                restartOnly: true)
        case .openClawWaitingEvents: Spec(.limits, 16, 0...1024, "calls", "such calls waiting per node (more: UNAVAILABLE at once)", restartOnly: true)
        case .openClawCanvasWaitMs:
            Spec(
                .limits, 5000, 100...60_000, "ms",
                "for the gateway's fresh canvas capability after its canvas host refused the one held", restartOnly: true)
        case .maxUnauthenticated: Spec(.admission, 64, 1...100_000, "connections", "connections that have not proved a paired key (more: the busiest address's oldest goes)")
        case .maxUnauthenticatedPerAddress: Spec(.admission, 8, 1...100_000, "connections", "such connections per source address (more: refused)")
        case .maxUnauthenticatedPerListener:
            Spec(
                .admission, nil, 1...100_000, "connections",
                "such connections per listener; unset: three quarters of maxUnauthenticated with several listeners, all of it with one")
        case .maxWaiting: Spec(.admission, 32, 1...10_000, "connections", "connections waiting for the operator's decision")
        case .attemptsPerWindow: Spec(.admission, 20, 1...1_000_000, "connections", "attempts per address in a window (more: locked out)")
        case .windowSeconds: Spec(.admission, 10, 1...3600, "seconds", "that window")
        case .lockoutSeconds: Spec(.admission, 60, 0...86_400, "seconds", "how long an address stays locked out")
        case .unpairedDeadlineSeconds: Spec(.admission, 10, 1...600, "seconds", "from accept to a paired session or a request waiting for the operator")
        case .capabilityTTLMs:
            Spec(.canvas, 600_000, 10_000...86_400_000, "ms", "how long a canvas capability lives after its last use (a node's welcome and grants carry it)")
        case .backgroundRetryAfterMs:
            Spec(.access, 5000, 0...3_600_000, "ms", "the retryAfterMs of NODE_BACKGROUND_UNAVAILABLE, the fast-fail of a backgrounded node")
        case .wakeTimeoutMs: Spec(.wake, 10_000, 100...120_000, "ms", "how long the wake hook may run before it is killed")
        case .notifyTimeoutMs: Spec(.notify, 10_000, 100...120_000, "ms", "how long the notify hook may run before it is killed")
        }
    }

    public static func `in`(_ section: Section) -> [Limit] { allCases.filter { $0.spec.section == section } }

    /// The value as config.json and the tables write it: `8388608 (8 MiB)`.
    public static func describe(_ value: Int, unit: String) -> String {
        guard unit.hasPrefix("bytes"), value >= 1024, value % 1024 == 0 else { return String(value) }
        let (size, name) = value % (1 << 20) == 0 ? (value >> 20, "MiB") : (value >> 10, "KiB")
        return "\(value) (\(size) \(name))"
    }

    /// The Markdown table README carries (one row per key, in the table's order).
    public static var markdownTable: String {
        var rows = ["| key | default | range | unit | what it bounds |", "|---|---|---|---|---|"]
        for limit in allCases {
            let spec = limit.spec
            let value = spec.defaultValue.map { describe($0, unit: spec.unit) } ?? "derived"
            rows.append("| `\(limit.path)` | \(value) | \(spec.range.lowerBound)–\(spec.range.upperBound) | \(spec.unit) | \(spec.doc) |")
        }
        return rows.joined(separator: "\n")
    }

    /// The same table for lanbridge-config(5), in roff (packaging/lanbridge-config.5).
    public static var manPageEntries: String {
        func roff(_ text: String) -> String {
            text.replacing("\\", with: "\\e").replacing("-", with: "\\-")
                .replacing("`", with: "").replacing("–", with: "\\(en")
        }
        return allCases.map { limit in
            let spec = limit.spec
            let value = spec.defaultValue.map { "\($0)" } ?? "derived"
            return ".TP\n.B \(limit.path)\n"
                + roff("\(spec.doc). Default \(value); \(spec.range.lowerBound)–\(spec.range.upperBound) \(spec.unit)\(spec.restartOnly ? "; applied at the next start" : "").")
        }.joined(separator: "\n")
    }
}

/// Values of one section of the table: every key's, the default where the config sets none.
public struct LimitValues: Sendable, Equatable {
    private var values: [Limit: Int]

    init(_ section: Limit.Section) {
        values = Dictionary(uniqueKeysWithValues: Limit.in(section).compactMap { limit in limit.spec.defaultValue.map { (limit, $0) } })
    }

    /// A key without a default reads 0 until set: use `value(_:)` for those.
    public subscript(_ limit: Limit) -> Int {
        get { values[limit] ?? 0 }
        set { values[limit] = newValue }
    }

    /// nil for a key that has no default and was not set.
    public func value(_ limit: Limit) -> Int? { values[limit] }
}
