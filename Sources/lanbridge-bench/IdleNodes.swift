import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeTransport
import Logging
import NIOCore
import NIOPosix

/// `lanbridge-bench idle-nodes PORT KEYFILE`: many paired nodes on one bridge, for
/// `scripts/bench-gateway`'s idle-memory and reconnect-storm figures. Node `i` connects from its
/// own source address (127.1.x.y), as nodes on a LAN do, so the bridge's per-address tables fill
/// as they would. KEYFILE holds one node's private key per line, in hex. One command per line on
/// stdin, one result line each:
///
///     connect N   -> connect WELCOMED SECONDS CPU   (sessions for the next N keys, 512 handshakes
///                                                  in flight; done when each has its `welcome`
///                                                  saying paired; CPU: this process)
///     close       -> close                          (closes them all; the next connect starts
///                                                  again from the first key)
///
/// On SwiftNIO with the bridge's own session code, so the driver is not the bottleneck.
enum IdleNodes {
    static let inFlight = 512
    /// The script counts what fails; a log line per node would drown it.
    static let quiet = Logger(label: "idle-nodes", factory: { _ in SwiftLogNoOpLogHandler() })

    static func run(port: Int, keyFile: String) async throws {
        let keys = try String(contentsOfFile: keyFile, encoding: .utf8).split(separator: "\n").map {
            try X25519.KeyPair(privateKey: SecureBytes(copying: Hex.decode(String($0))))
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var channels: [any Channel] = []
        var first = 0
        while let line = readLine() {
            let words = line.split(separator: " ")
            switch words.first {
            case "connect":
                let count = min(keys.count - first, words.count > 1 ? Int(words[1]) ?? keys.count : keys.count)
                let (cpu0, start) = (GatewayLoad.cpuSeconds(), ContinuousClock.now)
                var welcomed = 0
                await withTaskGroup(of: (any Channel, Bool)?.self) { tasks in
                    var next = 0
                    func add() {
                        let index = first + next
                        next += 1
                        // A node that fails to connect counts as not welcomed; the others go on.
                        tasks.addTask { try? await connect(index: index, key: keys[index], port: port, group: group) }
                    }
                    while next < min(count, inFlight) { add() }
                    for await outcome in tasks {
                        if let (channel, paired) = outcome {
                            channels.append(channel)
                            if paired { welcomed += 1 }
                        }
                        if next < count { add() }
                    }
                }
                first += count
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                GatewayLoad.say("connect \(welcomed) \(seconds) \(GatewayLoad.cpuSeconds() - cpu0)")
            case "close":
                for channel in channels { try? await channel.close() }
                channels.removeAll()
                first = 0
                GatewayLoad.say("close")
            default:
                GatewayLoad.say("error unknown command \(line)")
            }
        }
        try? await group.shutdownGracefully()
    }

    /// One node's session, from 127.1.x.y; true once the bridge's `welcome` says it is paired.
    static func connect(index: Int, key: X25519.KeyPair, port: Int, group: any EventLoopGroup) async throws -> (any Channel, Bool) {
        let (session, opening) = try SecureSession.initiate(with: key, invite: nil)
        let welcome = group.next().makePromise(of: Bool.self)
        let source = try SocketAddress(ipAddress: "127.1.\(index / 250 % 250).\(index % 250 + 1)", port: 0)
        let channel = try await ClientBootstrap(group: group)
            .bind(to: source)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SecureChannelHandler(initiator: session, opening: opening, logger: quiet))
                    try channel.pipeline.syncOperations.addHandler(WelcomeWaiter(welcome))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return (channel, try await welcome.futureResult.get())
    }

    /// Completes with whether the first message is a `welcome` saying paired; answers pings.
    final class WelcomeWaiter: ChannelInboundHandler {
        typealias InboundIn = SecureChannelInbound
        typealias OutboundOut = [UInt8]
        private let welcome: EventLoopPromise<Bool>

        init(_ welcome: EventLoopPromise<Bool>) { self.welcome = welcome }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case let .message(bytes) = unwrapInboundIn(data) else { return }
            switch try? SessionMessages.decode(bytes) {
            case let welcome as Welcome: self.welcome.succeed(welcome.paired)
            case let ping as Ping: context.writeAndFlush(wrapOutboundOut(SessionMessages.encode(Pong(id: ping.id))), promise: nil)
            default: break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            welcome.succeed(false)  // closed before its welcome (ignored once succeeded)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            welcome.succeed(false)
            context.close(promise: nil)
        }
    }
}
