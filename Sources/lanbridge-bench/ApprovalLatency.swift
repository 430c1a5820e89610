import Foundation
import LanbridgeBridge
import LanbridgeNode
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Logging

/// How long an approval takes to reach the waiting node on its open connection: from the moment the
/// CLI's write returns to the node's "connected" event. The budget is 200 ms.
/// The daemon and the nodes run in this process over loopback; the approval goes through the files,
/// as `lanbridge nodes approve` does, and reaches the daemon through inotify.
/// All pairings come from 127.0.0.1, which the bridge lets ask for `ChallengeLimits.perAddress`
/// code challenges an hour: more would be refused, so that is the most it measures.
func approvalLatencies(count: Int = ChallengeLimits.perAddress) async throws -> [Double] {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("lanbridge-bench-\(UUID().uuidString.prefix(8))")
    defer { try? FileManager.default.removeItem(at: state) }
    var configuration = BridgeConfiguration(stateDirectory: StateDirectory(url: state), name: "bench")
    configuration.listen = [.loopback]
    configuration.port = 0
    configuration.mdns = false
    let quiet = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    let server = Task { try await BridgeServer.run(configuration: configuration, logger: quiet, onListening: { portSink.yield($0) }) }
    defer { server.cancel() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { return [] }
    let store = PairingStore(directory: StateDirectory(url: state))

    var latencies: [Double] = []
    for i in 0..<count {
        let nodeState = state.appendingPathComponent("node-\(i)")
        let client = try NodeClient(
            configuration: .init(stateDirectory: nodeState, details: NodeDetails(displayName: "bench \(i)", platform: "linux")),
            logger: quiet)
        let run = Task { try await client.run(host: "127.0.0.1", port: port) }
        var events = client.events.makeAsyncIterator()
        var start = ContinuousClock.now
        while let event = await events.next() {
            if case let .verificationCode(code, requestId) = event {
                _ = try store.update { try $0.approve(requestId: requestId, code: code, now: Date()) }
                start = ContinuousClock.now
            } else if case .connected = event {
                let elapsed = ContinuousClock.now - start
                latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                break
            } else if case let .error(code, message) = event {
                // The client would retry for ever; a benchmark that waits for ever measures nothing.
                run.cancel()
                throw BenchError.pairingRefused("\(code): \(message)")
            }
        }
        run.cancel()
    }
    return latencies
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

enum BenchError: Error, CustomStringConvertible {
    case pairingRefused(String)
    var description: String {
        switch self {
        case let .pairingRefused(why): "the bridge refused a pairing: \(why)"
        }
    }
}
