import Prometheus

extension BridgeMetrics {
    /// Exported in Prometheus's format through `registry` (`/metrics`), the invoke durations in
    /// buckets from a millisecond to a minute.
    static func prometheus(_ registry: PrometheusCollectorRegistry) -> BridgeMetrics {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["lanbridge_invoke_duration_seconds"] = [
            .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
            .seconds(10), .seconds(30), .seconds(60),
        ]
        return BridgeMetrics(factory: factory)
    }
}
