import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// `lanbridge-bench gateway-load`: the gateway side of `scripts/bench-gateway`, on SwiftNIO, so the
/// load generator is never the bottleneck. It listens for the bridge's WebSocket link (bearer
/// auth, not checked: a benchmark) and runs an echo server for the socat baseline; the script
/// drives it with one command per line on stdin and reads one result line per command:
///
///     nodes N                          -> nodes ID ...            (once N nodes are connected)
///     rtt NODE COUNT WARMUP            -> rtt P50_US P99_US       (sequential node.invoke)
///     relay PORT COUNT WARMUP          -> relay P50_US P99_US     (the same bytes through a TCP relay to the echo server)
///     load SECONDS PERNODE NODE ...    -> load DONE SECONDS CPU   (PERNODE invokes in flight per node; CPU: this process)
///     large NODE COUNT                 -> large BYTES MS ...      (canvas.snapshot 1400x1400)
///     bystander NODE BIG RESULTS SIDE  -> bystander P50_US P99_US SAMPLES BYTES
///                                         (an invoke on NODE every 2 ms while BIG answers RESULTS
///                                          SIDE x SIDE snapshots back to back; a SIDE of wN asks
///                                          for objects of N keys instead)
///
/// Everything runs on one event loop: no task, no stream, per request.
enum GatewayLoad {
    static let payload = "{\"k\":\"" + String(repeating: "x", count: 64) + "\"}"

    static func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let state = LoadState(loop: loop)
        let gateway = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: 1 << 26,
                    shouldUpgrade: { channel, _ in
                        channel.eventLoop.makeSucceededFuture(HTTPHeaders())
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16, maxAccumulatedFrameSize: 1 << 26))
                            try channel.pipeline.syncOperations.addHandler(LinkHandler(state: state))
                        }
                    })
                return channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let echo = try await ServerBootstrap(group: group)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { $0.pipeline.addHandler(EchoHandler()) }
            .bind(host: "127.0.0.1", port: 0).get()
        say("listening \(gateway.localAddress!.port!)")
        say("echo \(echo.localAddress!.port!)")

        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            guard let command = words.first else { continue }
            switch command {
            case "nodes":
                let nodes = try await state.waitForNodes(Int(words[1])!).get()
                say("nodes " + nodes.joined(separator: " "))
            case "rtt":
                let samples = try await state.sequential(node: words[1], count: Int(words[2])!, warmup: Int(words[3])!).get()
                say("rtt \(percentile(samples, 0.5)) \(percentile(samples, 0.99))")
            case "relay":
                let samples = try await relay(port: Int(words[1])!, count: Int(words[2])!, warmup: Int(words[3])!, on: loop, frame: state.frame(node: "relay", id: 1))
                say("relay \(percentile(samples, 0.5)) \(percentile(samples, 0.99))")
            case "load":
                let cpu0 = cpuSeconds(), start = NIODeadline.now()
                let done = try await state.load(seconds: Double(words[1])!, perNode: Int(words[2])!, nodes: Array(words[3...])).get()
                let elapsed = Double((NIODeadline.now() - start).nanoseconds) / 1e9
                say("load \(done) \(elapsed) \(cpuSeconds() - cpu0)")
            case "large":
                let (bytes, times) = try await state.large(node: words[1], count: Int(words[2])!).get()
                say("large \(bytes) " + times.map { String(format: "%.1f", $0) }.joined(separator: " "))
            case "bystander":
                let large =
                    words[4].hasPrefix("w")
                    ? ("device.echo", "{\"wideKeys\":\(words[4].dropFirst())}")
                    : ("canvas.snapshot", "{\"width\":\(words[4]),\"height\":\(words[4])}")
                let (samples, bytes) = try await state.bystander(node: words[1], big: words[2], results: Int(words[3])!, large: large).get()
                say("bystander \(percentile(samples, 0.5)) \(percentile(samples, 0.99)) \(samples.count) \(bytes)")
            default:
                say("error unknown command \(command)")
            }
        }
        try? await gateway.close()
        try? await echo.close()
        try? await group.shutdownGracefully()
    }

    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func percentile(_ samples: [Double], _ p: Double) -> Int {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return 0 }  // `--bystander 0`: nothing timed
        return Int(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))].rounded())
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The baseline: the same request bytes, and a newline, through the relay to the echo server
    /// and back, sequentially, timed the same way.
    static func relay(port: Int, count: Int, warmup: Int, on loop: any EventLoop, frame: [UInt8]) async throws -> [Double] {
        let done = loop.makePromise(of: [Double].self)
        let line = frame + [UInt8(ascii: "\n")]
        _ = try await ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { $0.pipeline.addHandler(RelayClient(line: line, count: count, warmup: warmup, done: done)) }
            .connect(host: "127.0.0.1", port: port).get()
        return try await done.futureResult.get()
    }
}

/// What the generator knows, confined to its one event loop.
final class LoadState: @unchecked Sendable {
    let loop: any EventLoop
    var link: ChannelHandlerContext?
    var connected: [String] = []
    private var nodeWaiters: [(Int, EventLoopPromise<[String]>)] = []
    private var pending: [Int: (sent: NIODeadline, done: (Int) -> Void)] = [:]
    private var nextID = 0

    init(loop: any EventLoop) { self.loop = loop }

    func frame(node: String, id: Int, command: String = "device.echo", params: String = GatewayLoad.payload) -> [UInt8] {
        Array(
            ("{\"type\":\"req\",\"id\":\"\(id)\",\"method\":\"node.invoke\",\"params\":{\"nodeId\":\"\(node)\",\"command\":\"\(command)\","
                + "\"params\":\(params),\"idempotencyKey\":\"k\(id)\"}}").utf8)
    }

    func nodeConnected(_ id: String) {
        if !connected.contains(id) { connected.append(id) }
        nodeWaiters.removeAll { want, promise in
            guard connected.count >= want else { return false }
            promise.succeed(Array(connected.prefix(want)))
            return true
        }
    }

    func waitForNodes(_ count: Int) -> EventLoopFuture<[String]> {
        loop.flatSubmit { [self] in
            if connected.count >= count { return loop.makeSucceededFuture(Array(connected.prefix(count))) }
            let promise = loop.makePromise(of: [String].self)
            nodeWaiters.append((count, promise))
            return promise.futureResult
        }
    }

    /// Sends one invoke; `done` gets the response frame's size.
    func invoke(node: String, command: String = "device.echo", params: String = GatewayLoad.payload, _ done: @escaping (Int) -> Void) {
        guard let link else { return }
        nextID += 1
        pending[nextID] = (.now(), done)
        let bytes = frame(node: node, id: nextID, command: command, params: params)
        link.writeAndFlush(NIOAny(WebSocketFrame(fin: true, opcode: .text, data: link.channel.allocator.buffer(bytes: bytes))), promise: nil)
    }

    func responded(id: Int, size: Int) {
        pending.removeValue(forKey: id)?.done(size)
    }

    func sentAt(_ id: Int) -> NIODeadline? { pending[id]?.sent }

    func sequential(node: String, count: Int, warmup: Int) -> EventLoopFuture<[Double]> {
        loop.flatSubmit { [self] in
            let promise = loop.makePromise(of: [Double].self)
            var samples: [Double] = []
            samples.reserveCapacity(count)
            var left = count + warmup
            func next() {
                let sent = NIODeadline.now()
                invoke(node: node) { _ in
                    if left <= count { samples.append(Double((NIODeadline.now() - sent).nanoseconds) / 1000) }
                    left -= 1
                    if left == 0 { promise.succeed(samples) } else { next() }
                }
            }
            next()
            return promise.futureResult
        }
    }

    func load(seconds: Double, perNode: Int, nodes: [String]) -> EventLoopFuture<Int> {
        loop.flatSubmit { [self] in
            let promise = loop.makePromise(of: Int.self)
            let stop = NIODeadline.now() + .milliseconds(Int64(seconds * 1000))
            var done = 0, inFlight = 0
            func next(_ node: String) {
                inFlight += 1
                invoke(node: node) { _ in
                    done += 1
                    inFlight -= 1
                    if NIODeadline.now() < stop { next(node) } else if inFlight == 0 { promise.succeed(done) }
                }
            }
            for node in nodes { for _ in 0..<perNode { next(node) } }
            return promise.futureResult
        }
    }

    /// Small invokes on `node`, one every 2 ms whatever is outstanding, while `big` returns
    /// `results` large answers back to back: what one node's large results cost everybody else.
    /// Open loop, each timed from when it was due: a stall delays every invoke due during it, not
    /// only the one in flight (sequential sampling would hide it in the 99th percentile).
    func bystander(node: String, big: String, results: Int, large: (command: String, params: String)) -> EventLoopFuture<([Double], Int)> {
        loop.flatSubmit { [self] in
            let promise = loop.makePromise(of: ([Double], Int).self)
            var samples: [Double] = [], done = 0, bytes = 0, outstanding = 0, finished = false
            func nextLarge() {
                invoke(node: big, command: large.command, params: large.params) { size in
                    done += 1
                    bytes = size
                    if done < results { nextLarge() }
                }
            }
            var due = NIODeadline.now()
            func tick() {
                guard done < results else {
                    finished = true
                    if outstanding == 0 { promise.succeed((samples, bytes)) }
                    return
                }
                let at = due
                outstanding += 1
                invoke(node: node) { _ in
                    samples.append(Double((NIODeadline.now() - at).nanoseconds) / 1000)
                    outstanding -= 1
                    if finished, outstanding == 0 { promise.succeed((samples, bytes)) }
                }
                due = due + .milliseconds(2)
                loop.scheduleTask(deadline: due) { tick() }
            }
            nextLarge()
            tick()
            return promise.futureResult
        }
    }

    func large(node: String, count: Int) -> EventLoopFuture<(Int, [Double])> {
        loop.flatSubmit { [self] in
            let promise = loop.makePromise(of: (Int, [Double]).self)
            var times: [Double] = [], size = 0
            func next() {
                let sent = NIODeadline.now()
                invoke(node: node, command: "canvas.snapshot", params: "{\"width\":1400,\"height\":1400}") { bytes in
                    size = bytes
                    times.append(Double((NIODeadline.now() - sent).nanoseconds) / 1e6)
                    if times.count == count { promise.succeed((size, times)) } else { next() }
                }
            }
            next()
            return promise.futureResult
        }
    }
}

/// The bridge's WebSocket link, as the gateway holds it.
final class LinkHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    private let state: LoadState

    init(state: LoadState) { self.state = state }

    func handlerAdded(context: ChannelHandlerContext) { state.link = context }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            let bytes = frame.unmaskedData.readableBytesView
            // Responses are read by scanning for their ID; events (rare) are parsed.
            if bytes.starts(with: Array("{\"type\":\"res\"".utf8)) || !bytes.starts(with: Array("{\"type\":\"event\"".utf8)) {
                if let id = Self.field("id", in: bytes).flatMap(Int.init) {
                    guard Self.contains(bytes, "\"ok\":true") else {
                        FileHandle.standardError.write(Data("invoke failed: ".utf8) + Data(bytes.prefix(400)) + Data("\n".utf8))
                        exit(1)
                    }
                    state.responded(id: id, size: bytes.count)
                    return
                }
            }
            if Self.contains(bytes, "\"type\":\"connected\""), let node = Self.field("nodeId", in: bytes) { state.nodeConnected(node) }
        case .ping:
            context.writeAndFlush(NIOAny(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if state.link === context { state.link = nil }
    }

    static func field(_ name: String, in bytes: ByteBufferView) -> String? {
        let key = Array("\"\(name)\":\"".utf8)
        guard let start = bytes.firstRange(of: key)?.upperBound, let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    static func contains(_ bytes: ByteBufferView, _ text: String) -> Bool {
        bytes.firstRange(of: Array(text.utf8)) != nil
    }
}

final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.writeAndFlush(data, promise: nil) }
}

/// Sends a line, waits for it to come back whole, and again, timing each round trip.
final class RelayClient: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let line: [UInt8]
    private var left: Int
    private let count: Int
    private let done: EventLoopPromise<[Double]>
    private var received = 0
    private var sent = NIODeadline.now()
    private var samples: [Double] = []

    init(line: [UInt8], count: Int, warmup: Int, done: EventLoopPromise<[Double]>) {
        (self.line, self.count, left, self.done) = (line, count, count + warmup, done)
    }

    func channelActive(context: ChannelHandlerContext) { send(context) }

    private func send(_ context: ChannelHandlerContext) {
        received = 0
        sent = .now()
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: line)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received >= line.count else { return }
        if left <= count { samples.append(Double((NIODeadline.now() - sent).nanoseconds) / 1000) }
        left -= 1
        if left == 0 {
            done.succeed(samples)
            context.close(promise: nil)
        } else {
            send(context)
        }
    }
}
