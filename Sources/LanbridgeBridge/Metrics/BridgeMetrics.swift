import CoreMetrics
import LanbridgeProtocol
import LanbridgeCore
import LanbridgeState
import NIOConcurrencyHelpers

/// What the bridge counts, through swift-metrics. Every label value comes from a fixed set (a
/// command family, a protocol error code, a refusal kind), never from what a peer chose, so a
/// peer cannot grow the series; node IDs are not labels.
///
/// `BridgeMetrics.disabled` makes no handles and returns at once: the callers are the same with
/// or without an endpoint.
public final class BridgeMetrics: Sendable {
    /// Counts nothing, at the cost of one branch per event (the relay's hot path calls it per invoke).
    public static let disabled = BridgeMetrics(factory: nil)

    private let factory: (any MetricsFactory)?
    /// Handles by label and label values, made on first use; the types differ, the table is one.
    private let handles = NIOLockedValueBox<[String: any Sendable]>([:])

    public convenience init(factory: any MetricsFactory) {
        self.init(factory: .some(factory))
    }

    private init(factory: (any MetricsFactory)?) {
        self.factory = factory
    }

    // MARK: - Events

    /// A Noise handshake ended: `completed` or `failed` (an error, a timeout, or the peer left).
    func handshake(completed: Bool) {
        counter("lanbridge_handshakes_total", ("outcome", completed ? "completed" : "failed"))?.increment()
    }

    /// A connection refused or closed by admission: a `AdmissionPolicy.Refusal.kind`, or "evicted".
    func admissionRefused(_ reason: String) {
        counter("lanbridge_admission_refusals_total", ("reason", Self.slug(reason)))?.increment()
    }

    /// An invoke answered (by the node, or refused by the bridge), and how long it took.
    func invoke(command: String, outcome: String, seconds: Double) {
        guard factory != nil else { return }
        let family = Self.family(of: command)
        counter("lanbridge_invokes_total", ("family", family), ("outcome", Self.outcomes.contains(outcome) ? outcome : "NODE_ERROR"))?.increment()
        timer("lanbridge_invoke_duration_seconds", ("family", family))?.recordNanoseconds(Int64(seconds * 1e9))
    }

    /// A console login or session refused: `ConsoleSessions.Refusal` (wrong token, another uid, uid unknown).
    func consoleRefused(_ reason: String) { counter("lanbridge_console_refusals_total", ("reason", reason))?.increment() }

    /// An HTTP connection refused past its peer's bound.
    func httpRefused(_ reason: String) { counter("lanbridge_http_refusals_total", ("reason", reason))?.increment() }

    /// The canvas relay refused a request or cut a response: a `CanvasRequest.Refusal.reason` or a limit's name.
    func canvasRefused(_ reason: String) { counter("lanbridge_canvas_refusals_total", ("reason", reason))?.increment() }
    /// A request the canvas relay passed upstream.
    func canvasRelayed() { counter("lanbridge_canvas_requests_total")?.increment() }

    func gatewayReconnect() { counter("lanbridge_gateway_reconnects_total")?.increment() }

    /// A node's result nobody waited for any more, by `InvokeBook.DropReason`.
    func resultDropped(_ reason: String) { counter("lanbridge_results_dropped_total", ("reason", reason))?.increment() }

    /// Invokes waiting for their node (`hold`) now.
    func held(_ count: Int) { gauge("lanbridge_invokes_held")?.record(Double(count)) }

    /// A wake hook run ended: `ok`, `failed` (nonzero exit), `timeout`, `error` (could not start)
    /// or `skipped` (too many already running).
    func wake(_ outcome: String) { counter("lanbridge_wake_runs_total", ("outcome", outcome))?.increment() }
    /// A notify hook's run (an invoke waits for the operator): ok, failed, timeout, error, skipped.
    func notify(_ outcome: String) { counter("lanbridge_notify_runs_total", ("outcome", outcome))?.increment() }

    /// How late the relay loop ran a task scheduled on it (its lag), each quarter second.
    func loopLag(seconds: Double) { gauge("lanbridge_loop_lag_seconds")?.record(seconds) }

    /// Invoke payloads carried: `to_node` (the gateway's params) or `to_gateway` (the node's results).
    func relayed(bytes: Int, toGateway: Bool) {
        guard factory != nil else { return }  // before the label array is made: twice per invoke
        counter("lanbridge_relayed_bytes_total", ("direction", toGateway ? "to_gateway" : "to_node"))?.increment(by: Int64(bytes))
    }

    func auditAppended(_ entries: Int) { counter("lanbridge_audit_appends_total")?.increment(by: Int64(entries)) }

    /// Levels, set when scraped.
    func sample(_ snapshot: BridgeHealth.Snapshot) {
        gauge("lanbridge_nodes_paired")?.record(snapshot.paired)
        gauge("lanbridge_nodes_connected")?.record(snapshot.connected)
        gauge("lanbridge_nodes_foreground")?.record(snapshot.foreground)
        gauge("lanbridge_pairing_requests_pending")?.record(snapshot.pending)
        gauge("lanbridge_gateway_link_up")?.record(snapshot.gatewayUp ? 1 : 0)
        gauge("lanbridge_store_readable")?.record(snapshot.storeReadable ? 1 : 0)
        // What RSS is made of, for a soak to tell a table that keeps something from the allocator.
        let heap = AllocatorPolicy.heap
        for (kind, bytes) in [("in_use", heap.inUse), ("free", heap.free), ("mapped", heap.mapped)] {
            gauge("lanbridge_heap_bytes", ("kind", kind))?.record(bytes)
        }
    }

    // MARK: - Bounded label values

    static let families: Set<String> = Set(CommandCatalog.builtIn.compactMap { $0.split(separator: ".").first.map(String.init) }).union(["agent"])
    static let outcomes: Set<String> = [
        "ok", ErrorMessage.invalidRequest, ErrorMessage.unknownMethod, ErrorMessage.forbidden, ErrorMessage.nodeNotFound,
        ErrorMessage.nodeNotConnected, ErrorMessage.backgroundUnavailable, ErrorMessage.rateLimited, ErrorMessage.payloadTooLarge, ErrorMessage.holdLimit,
        ErrorMessage.timeout, ErrorMessage.unavailable, ErrorMessage.commandFailed, ErrorMessage.invalidResult, ErrorMessage.cancelled,
        // An asked invoke's end is named by its reason (ask rules: the operator said no, or nobody answered).
        ErrorMessage.askedDenied, ErrorMessage.askTimeout,
    ]

    /// "canvas.snapshot" → "canvas"; anything outside the catalog's families → "other".
    static func family(of command: String) -> String {
        let prefix = command.prefix { $0 != "." }
        return families.contains(String(prefix)) ? String(prefix) : "other"
    }

    /// "over the per-address cap" → "over_the_per_address_cap".
    static func slug(_ text: String) -> String {
        String(text.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    // MARK: - Handles, made once per label set (nil when disabled)

    /// Callers pass the label values in one fixed order per metric, so they are the key as given.
    private func handle<H: Sendable>(_ label: String, _ dimensions: [(String, String)], make: (any MetricsFactory) -> H) -> H? {
        guard let factory else { return nil }
        var key = label
        for (name, value) in dimensions { key += "|\(name)=\(value)" }
        return handles.withLockedValue { table in
            if let existing = table[key] as? H { return existing }
            let made = make(factory)
            table[key] = made
            return made
        }
    }

    private func counter(_ label: String, _ dimensions: (String, String)...) -> Counter? {
        handle(label, dimensions) { Counter(label: label, dimensions: dimensions, factory: $0) }
    }

    private func timer(_ label: String, _ dimensions: (String, String)...) -> Timer? {
        handle(label, dimensions) { Timer(label: label, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: $0) }
    }

    private func gauge(_ label: String, _ dimensions: (String, String)...) -> Gauge? {
        handle(label, dimensions) { Gauge(label: label, dimensions: dimensions, factory: $0) }
    }
}
