import FoundationEssentials
import LanbridgeCrypto
import LanbridgeNet
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import Logging
import NIOConcurrencyHelpers
import NIOCore

extension OpenClawLinks {
    /// One node's socket at the gateway, and what waits for it.
    final class NodeLink {
        let token: Int
        var task: Task<Void, Never>?
        var handler: OpenClawLinkHandler?
        var foreground: Bool
        /// What the node's rules let the gateway ask (OpenClaw's names). A command added re-offers
        /// at once; one taken away waits for the next connect (lanbridge refuses it meanwhile).
        var commands: [String]
        /// What the current (or last) socket offered at its connect, nil before the first.
        var offered: Set<String>?
        /// The token the gateway issued this node's device (its last `hello-ok` that had one):
        /// every later connect carries it, whatever becomes of the shared token.
        var deviceToken: String?
        /// What the node said while its socket was re-offering or reconnecting: sent once it is up
        /// again, or answered UNAVAILABLE after `timing.eventWait` (a value: `WaitingEvents`),
        /// and the one timer for the oldest.
        var waiting: WaitingEvents
        var waitTimer: Scheduled<Void>?
        /// The relay waits for a fresh canvas capability (its request met 401): answered by the
        /// gateway's reply, the socket's end, or `timing.canvasWait`.
        var canvasWaiters: [EventLoopPromise<String?>] = []
        init(token: Int, foreground: Bool, commands: [String], waiting: WaitingEvents) {
            (self.token, self.foreground, self.commands, self.waiting) = (token, foreground, commands, waiting)
        }

        /// Offered now and not at the last connect: a new socket must carry them.
        var unoffered: Set<String> { Set(commands).subtracting(offered ?? []) }

        func stop() {
            task?.cancel()
            waitTimer?.cancel()
            answerCanvas(nil)
        }

        func answerCanvas(_ capability: String?) {
            let waiters = canvasWaiters
            canvasWaiters = []
            for waiter in waiters { waiter.succeed(capability) }
        }
    }
}
