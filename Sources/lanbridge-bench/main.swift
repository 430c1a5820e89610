// lanbridge-bench: throughput figures beside the raw libsodium speed measured in the same run.
//
//   swift run -c release lanbridge-bench [--seconds S] [--json] [--only WORD] [--default-allocator]
//   lanbridge-bench gateway-load      (the SwiftNIO gateway scripts/bench-gateway drives)
//   lanbridge-bench idle-nodes PORT KEYFILE   (many paired nodes at once, for the same script)
//
// Every lanbridge figure is printed with its theoretical ceiling (the libsodium primitives it is
// built from, timed here and now) and the ratio between them.
import Foundation
import LanbridgeBridge
import LanbridgeCrypto
import LanbridgeProtocol
import TestSupport

let arguments = CommandLine.arguments
let usage = """
    usage: lanbridge-bench [--seconds S] [--json] [--only WORD] [--default-allocator]
           lanbridge-bench gateway-load               the SwiftNIO gateway scripts/bench-gateway drives
           lanbridge-bench idle-nodes PORT KEYFILE    many paired nodes at once, for the same script

    Throughput figures, each beside the libsodium primitives it is built from, timed in the same run
    (about 17 s at the default --seconds 1; build with -c release for figures that mean anything).
      --seconds S          how long each figure is measured (default 1)
      --json               print the figures as JSON
      --only WORD          only the figures whose name contains WORD
      --default-allocator  glibc's allocator defaults instead of the daemon's policy
    """
let known: Set<String> = ["--seconds", "--json", "--only", "--default-allocator"]
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
if let unknown = arguments.dropFirst().first(where: { $0.hasPrefix("-") && !known.contains($0) }) {
    FileHandle.standardError.write(Data("lanbridge-bench: unknown option \(unknown)\n\(usage)\n".utf8))
    exit(64)
}
if arguments.dropFirst().first == "gateway-load" {
    try await GatewayLoad.run()
    exit(0)
}
if arguments.dropFirst().first == "idle-nodes", arguments.count == 4, let port = Int(arguments[2]) {
    try await IdleNodes.run(port: port, keyFile: arguments[3])
    exit(0)
}
/// The argument after `flag`, if there is one.
func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
let secondsPerFigure = value(after: "--seconds").flatMap { Double($0) } ?? 1.0
let asJSON = arguments.contains("--json")
/// `--only transport`: just the figures whose name has the word (to profile one of them).
let only = value(after: "--only")
func wanted(_ name: String) -> Bool { only.map { name.contains($0) } ?? true }
/// The daemon's allocator policy (`lanbridge serve` sets it), unless `--default-allocator` asks for glibc's defaults.
let allocator = arguments.contains("--default-allocator") || !AllocatorPolicy.keepLargeBuffers() ? "glibc's defaults" : "the daemon's policy"

/// Runs `body` in batches until `secondsPerFigure` have passed; returns operations per second.
func rate(_ body: () throws -> Int) rethrows -> Double {
    let clock = ContinuousClock()
    _ = try body()  // warm-up
    var operations = 0
    let start = clock.now
    while clock.now - start < .seconds(secondsPerFigure) {
        operations += try body()
    }
    let elapsed = clock.now - start
    return Double(operations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

struct Figure: Encodable {
    let name: String
    let unit: String
    let measured: Double
    let ceiling: Double
    let ceilingSource: String
    let ratio: Double

    init(name: String, unit: String, measured: Double, ceiling: Double, ceilingSource: String) {
        (self.name, self.unit, self.measured, self.ceiling, self.ceilingSource) = (name, unit, measured, ceiling, ceilingSource)
        ratio = measured / ceiling
    }
}

// MARK: - Raw libsodium

let staticKey = X25519.KeyPair.generate()
let peerKey = X25519.KeyPair.generate()
let dhPerSecond = try rate {
    for _ in 0..<100 { _ = try X25519.sharedSecret(staticKey.privateKey, peerKey.publicKey) }
    return 100
}
let basePerSecond = rate {
    for _ in 0..<100 { _ = X25519.publicKey(for: staticKey.privateKey) }
    return 100
}

/// Raw seal + open of the same message, cut into the same chunks the transport uses: the most any
/// transport built on libsodium could do with these bytes (same cache footprint, no framing).
func rawAEADBytesPerSecond(messageSize: Int) throws -> Double {
    let key = SecureBytes.random(count: 32)
    let message = SecureRandom.bytes(messageSize)
    let chunks = Chunking.ranges(forMessageOf: messageSize).map { message[$0.range] }
    var nonce: UInt64 = 0
    let empty: [UInt8] = []
    return try rate {
        let batch = max(1, (1 << 20) / messageSize)
        for _ in 0..<batch {
            for chunk in chunks {
                let sealed = ChaChaPoly.seal(key: key, nonce: nonce, ad: empty, plaintext: chunk)
                _ = try ChaChaPoly.open(key: key, nonce: nonce, ad: empty, ciphertext: sealed)
                nonce += 1
            }
        }
        return batch * messageSize
    }
}

// MARK: - lanbridge

func establishedPair() throws -> (SecureSession, SecureSession) {
    var (node, opening) = try SecureSession.initiate(with: peerKey)
    var bridge = SecureSession(responderWith: staticKey)
    for case let .send(message2) in try bridge.receive(opening) {
        for case let .send(message3) in try node.receive(message2) { _ = try bridge.receive(message3) }
    }
    node.authorize()
    bridge.authorize()
    return (node, bridge)
}

let handshakesPerSecond =
    wanted("handshakes")
    ? try rate {
        for _ in 0..<20 { _ = try establishedPair() }
        return 20
    } : 0
// Per XX handshake, both ends together: 2 ephemeral key generations (base-point multiplications)
// and 6 DH operations (ee, es, se on each side).
let handshakeCeiling = 1 / (2 / basePerSecond + 6 / dhPerSecond)

/// Application payload bytes per second through seal (node) and receive (bridge).
func transportBytesPerSecond(messageSize: Int) throws -> Double {
    var (node, bridge) = try establishedPair()
    let message = SecureRandom.bytes(messageSize)
    return try rate {
        let batch = max(1, (1 << 20) / messageSize)
        for _ in 0..<batch {
            var delivered = 0
            for frame in try node.sealFrames(message) { delivered += try bridge.receive(frame).count }
            precondition(delivered == 1)
        }
        return batch * messageSize
    }
}

func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
var figures: [Figure] = []
/// Prints each figure as soon as it is measured (flushed: a run that is stopped keeps what it had).
@MainActor func report(_ figure: Figure) {
    figures.append(figure)
    guard !asJSON else { return }
    print(
        pad(figure.name, 52) + pad(String(format: "%.1f %@", figure.measured, figure.unit), 22)
            + pad(String(format: "%.1f %@", figure.ceiling, figure.unit), 22) + String(format: "%.2f", figure.ratio))
    fflush(nil)
}
if !asJSON {
    print(String(format: "libsodium in this run: x25519 DH %.0f/s, x25519 base %.0f/s; allocator: %@", dhPerSecond, basePerSecond, allocator))
    print("")
    print(pad("figure", 52) + pad("lanbridge", 22) + pad("baseline", 22) + "ratio")
}
if wanted("handshakes") {
    report(
        Figure(
            name: "XX handshakes per second per core (both ends)", unit: "handshakes/s",
            measured: handshakesPerSecond, ceiling: handshakeCeiling, ceilingSource: "2 x25519 base + 6 x25519 DH"))
}
for (label, size) in [("1 KiB", 1024), ("1 MiB", 1 << 20)] where wanted("transport, \(label)") {
    report(
        Figure(
            name: "transport, \(label) messages (seal + open)", unit: "MB/s",
            measured: try transportBytesPerSecond(messageSize: size) / 1e6,
            ceiling: try rawAEADBytesPerSecond(messageSize: size) / 1e6,
            ceilingSource: "raw ChaCha20-Poly1305 seal+open of the same message in the same chunks"))
}

// MARK: - The scanner under adversarial shapes

/// Bytes per second `JSONScanner` validates, for a 4 MiB document of `shape`.
func scannerBytesPerSecond(_ shape: JSONShape) throws -> Double {
    let document = shape.document(size: 4 << 20)
    return try rate {
        try JSONScanner.validate(document)
        return document.count
    }
}
let plainScan = wanted("scanner") ? try scannerBytesPerSecond(.plain) : 0
for shape in JSONShape.allCases where shape != .plain && wanted("scanner, 4 MiB \(shape.rawValue)") {
    report(
        Figure(
            name: "scanner, 4 MiB \(shape.rawValue)", unit: "MB/s", measured: try scannerBytesPerSecond(shape) / 1e6,
            ceiling: plainScan / 1e6, ceilingSource: "the scanner on a plain object of the same size (long strings), same run"))
}

let approvals = wanted("approval") ? try await approvalLatencies() : []
let approvalP50 = percentile(approvals, 0.5), approvalP99 = percentile(approvals, 0.99)

struct Report: Encodable {
    let secondsPerFigure: Double
    let allocator: String
    let x25519DHPerSecond: Double
    let x25519BasePerSecond: Double
    let figures: [Figure]
    let approvalLatencyMs: [String: Double]
}

if asJSON {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(
        String(
            decoding: try encoder.encode(
                Report(
                    secondsPerFigure: secondsPerFigure, allocator: allocator, x25519DHPerSecond: dhPerSecond,
                    x25519BasePerSecond: basePerSecond, figures: figures,
                    approvalLatencyMs: ["p50": approvalP50, "p99": approvalP99, "budget": 200])), as: UTF8.self))
} else if !approvals.isEmpty {
    print("")
    print(
        String(
            format: "approval reaches the waiting node (%d pairings): p50 %.1f ms, p99 %.1f ms; budget 200 ms (p99/budget %.2f)",
            approvals.count, approvalP50, approvalP99, approvalP99 / 200))
}
