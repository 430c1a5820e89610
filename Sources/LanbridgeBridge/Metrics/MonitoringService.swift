import NIOCore
import NIOHTTP1
import Prometheus

/// `GET /metrics` (Prometheus text format) and `GET /healthz` (200 "ok", or 503 and the reasons).
/// No authentication: the listener is loopback unless the admin forces another address.
struct MonitoringService: HTTPService {
    let registry: PrometheusCollectorRegistry
    let driver: BridgeDriver
    /// Without metrics only `/healthz` is served (the console's listener).
    let metrics: Bool

    func answer(_ request: HTTPRequest) async -> HTTPAnswer? {
        guard request.path == "/healthz" || (metrics && request.path == "/metrics") else { return nil }
        guard request.method == .GET || request.method == .HEAD else {
            return .reply(.text(.methodNotAllowed, "only GET\n", headers: [("Allow", "GET, HEAD")]))
        }
        guard let snapshot = try? await driver.snapshot().get() else { return .reply(.text(.serviceUnavailable, "the bridge is stopping\n")) }
        if request.path == "/healthz" {
            let problems = BridgeHealth.problems(snapshot)
            return .reply(.text(problems.isEmpty ? .ok : .serviceUnavailable, problems.isEmpty ? "ok\n" : problems.joined(separator: "\n") + "\n"))
        }
        driver.metrics.sample(snapshot)
        var body: [UInt8] = []
        registry.emit(into: &body)
        return .reply(HTTPReply(status: .ok, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: body))
    }
}
