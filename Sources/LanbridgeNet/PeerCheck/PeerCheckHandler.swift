import NIOCore

/// Holds back `channelActive`, so nothing above it writes a byte, until `verify` has judged the
/// peer; a peer it refuses gets nothing and the connection closes with `PeerRefused`.
final class PeerCheckHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias Verify = @Sendable (any Channel) -> EventLoopFuture<String?>

    private let verify: Verify
    init(verify: @escaping Verify) { self.verify = verify }

    func channelActive(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((context, self), eventLoop: context.eventLoop)
        verify(context.channel).whenComplete { result in
            let (context, handler) = bound.value
            switch result {
            case .success(nil):
                context.fireChannelActive()
                context.pipeline.syncOperations.removeHandler(handler, promise: nil)
            case let .success(reason?):
                context.fireErrorCaught(PeerRefused(reason: reason))
                context.close(promise: nil)
            case let .failure(error):
                context.fireErrorCaught(PeerRefused(reason: "cannot tell who the peer is: \(error)"))
                context.close(promise: nil)
            }
        }
    }
}

/// The peer is not who may receive anything.
public struct PeerRefused: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}
