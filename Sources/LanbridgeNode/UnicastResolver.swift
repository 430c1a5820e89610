#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeProtocol
import NIOCore
import NIOPosix

/// Asks a unicast DNS server (RFC 1035, over UDP) for one name and type: what `WideAreaBrowser`
/// needs, and no more (no cache, no TCP retry of a truncated answer: a bridge's records fit in
/// the 1232 bytes the query offers). An answer counts only if it comes from the server asked, to
/// the port that asked, with the query's random ID and question.
struct UnicastResolver: Sendable {
    let nameservers: [ReachableAddress]
    var attempts = 2
    var timeout: TimeAmount = .milliseconds(1500)
    var group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    struct NoAnswer: Error, CustomStringConvertible {
        let description: String
    }

    /// The answer, authority and additional records; empty when the name does not exist.
    func lookup(_ name: DNS.Name, _ type: DNS.RecordType) async throws -> [DNS.Record] {
        var last = "no name server"
        for _ in 0..<attempts {
            for server in nameservers {
                do {
                    let response = try await ask(server, name, type)
                    switch response.rcode {
                    case 0: return response.records
                    case 3: return []  // NXDOMAIN
                    default: last = "\(server) answered rcode \(response.rcode)"
                    }
                } catch {
                    last = "\(server): \(error)"
                }
            }
        }
        throw NoAnswer(description: "no answer for \(name) (\(type)): \(last)")
    }

    private func ask(_ server: ReachableAddress, _ name: DNS.Name, _ type: DNS.RecordType) async throws -> DNS.Response {
        let address = try SocketAddress(ipAddress: server.host, port: server.port)
        let id = UInt16.random(in: .min ... .max)
        let loop = group.next()
        let answered = loop.makePromise(of: DNS.Response.self)
        let expected = Expected(server: address, id: id, name: name, type: type.rawValue)
        let timeout = self.timeout
        let channel = try await DatagramBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AnswerHandler(expected: expected, answered: answered, timeout: timeout))
                }
            }
            .bind(host: address.protocol == .inet6 ? "::" : "0.0.0.0", port: 0).get()
        defer { channel.close(promise: nil) }
        let query = DNS.query(id: id, name: name, type: type)
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: query))).get()
        return try await answered.futureResult.get()
    }

    private struct Expected: Sendable {
        let server: SocketAddress
        let id: UInt16
        let name: DNS.Name
        let type: UInt16
    }

    /// Completes `answered` once, on the channel's loop: with the first datagram that is the
    /// answer (anything else is ignored), or a timeout.
    private final class AnswerHandler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let expected: Expected
        let answered: EventLoopPromise<DNS.Response>
        let timeout: TimeAmount
        private var deadline: Scheduled<Void>?
        private var done = false

        init(expected: Expected, answered: EventLoopPromise<DNS.Response>, timeout: TimeAmount) {
            (self.expected, self.answered, self.timeout) = (expected, answered, timeout)
        }

        func handlerAdded(context: ChannelHandlerContext) {
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.finish(.failure(NoAnswer(description: "timed out"))) }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            finish(.failure(NoAnswer(description: "closed")))
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            guard envelope.remoteAddress == expected.server,
                let response = try? DNS.parse(Array(envelope.data.readableBytesView)),
                response.id == expected.id, response.question?.name == expected.name, response.question?.type == expected.type
            else { return }
            finish(.success(response))
        }

        private func finish(_ result: Result<DNS.Response, any Error>) {
            guard !done else { return }
            done = true
            deadline?.cancel()
            answered.completeWith(result)
        }
    }
}
