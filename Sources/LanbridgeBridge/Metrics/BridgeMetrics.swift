import CoreMetrics
import LanbridgeProtocol
import LanbridgeState
import NIOConcurrencyHelpers

/// What the bridge counts, through swift-metrics. Every label value comes from a fixed set (a
/// command family, a protocol error code, a refusal kind), never from what a peer chose, so a
/// peer cannot grow the series; node IDs are not labels.
///
/// `BridgeMetrics.disabled` records into swift-metrics' no-op handlers: the counting code runs
/// the same with or without an endpoint.
public final class BridgeMetrics: Sendable {
    public static let disabled = BridgeMetrics(factory: NOOPMetricsHandler.instance)

    private let factory: any MetricsFactory
    private let counters = NIOLockedValueBox<[String: Counter]>([:])
    private let timers = NIOLockedValueBox<[String: Timer]>([:])
    private let gauges = NIOLockedValueBox<[String: Gauge]>([:])

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    // MARK: - Events

    /// A Noise handshake ended: `completed` or `failed` (an error, a timeout, or the peer left).
    func handshake(completed: Bool) {
        counter("lanbridge_handshakes_total", ["outcome": completed ? "completed" : "failed"]).increment()
    }

    /// A connection refused or closed by admission: a `AdmissionPolicy.Refusal.kind`, or "evicted".
    func admissionRefused(_ reason: String) {
        counter("lanbridge_admission_refusals_total", ["reason": Self.slug(reason)]).increment()
    }

    /// An invoke answered (by the node, or refused by the bridge), and how long it took.
    func invoke(command: String, outcome: String, seconds: Double) {
        let labels = ["family": Self.family(of: command), "outcome": Self.outcomes.contains(outcome) ? outcome : "NODE_ERROR"]
        counter("lanbridge_invokes_total", labels).increment()
        timer("lanbridge_invoke_duration_seconds", ["family": labels["family"]!]).recordNanoseconds(Int64(seconds * 1e9))
    }

    func gatewayReconnect() { counter("lanbridge_gateway_reconnects_total", [:]).increment() }

    /// Invoke payloads carried: `to_node` (the gateway's params) or `to_gateway` (the node's results).
    func relayed(bytes: Int, toGateway: Bool) {
        counter("lanbridge_relayed_bytes_total", ["direction": toGateway ? "to_gateway" : "to_node"]).increment(by: Int64(bytes))
    }

    func auditAppended(_ entries: Int) { counter("lanbridge_audit_appends_total", [:]).increment(by: Int64(entries)) }

    /// Levels, set when scraped.
    func sample(_ snapshot: BridgeHealth.Snapshot) {
        gauge("lanbridge_nodes_paired").record(snapshot.paired)
        gauge("lanbridge_nodes_connected").record(snapshot.connected)
        gauge("lanbridge_nodes_foreground").record(snapshot.foreground)
        gauge("lanbridge_pairing_requests_pending").record(snapshot.pending)
        gauge("lanbridge_gateway_link_up").record(snapshot.gatewayUp ? 1 : 0)
        gauge("lanbridge_store_readable").record(snapshot.storeReadable ? 1 : 0)
    }

    // MARK: - Bounded label values

    static let families: Set<String> = Set(CommandCatalog.builtIn.compactMap { $0.split(separator: ".").first.map(String.init) }).union(["agent"])
    static let outcomes: Set<String> = [
        "ok", ErrorMessage.invalidRequest, ErrorMessage.unknownMethod, ErrorMessage.forbidden, ErrorMessage.nodeNotFound,
        ErrorMessage.nodeNotConnected, ErrorMessage.backgroundUnavailable, ErrorMessage.rateLimited, ErrorMessage.payloadTooLarge,
        ErrorMessage.timeout, ErrorMessage.unavailable, ErrorMessage.commandFailed, ErrorMessage.invalidResult,
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

    // MARK: - Handles, made once per label set

    private func key(_ label: String, _ dimensions: [String: String]) -> (String, [(String, String)]) {
        let sorted = dimensions.sorted { $0.key < $1.key }
        return (label + sorted.map { "|\($0.key)=\($0.value)" }.joined(), sorted.map { ($0.key, $0.value) })
    }

    private func counter(_ label: String, _ dimensions: [String: String]) -> Counter {
        let (key, pairs) = key(label, dimensions)
        return counters.withLockedValue { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: pairs, factory: factory)
            table[key] = made
            return made
        }
    }

    private func timer(_ label: String, _ dimensions: [String: String]) -> Timer {
        let (key, pairs) = key(label, dimensions)
        return timers.withLockedValue { table in
            if let existing = table[key] { return existing }
            let made = Timer(label: label, dimensions: pairs, preferredDisplayUnit: .seconds, factory: factory)
            table[key] = made
            return made
        }
    }

    private func gauge(_ label: String) -> Gauge {
        gauges.withLockedValue { table in
            if let existing = table[label] { return existing }
            let made = Gauge(label: label, factory: factory)
            table[label] = made
            return made
        }
    }
}
