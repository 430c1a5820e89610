import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// What the book records and says: who asked, what is in flight, and its actions.
extension InvokeBook {
    /// Who asked: the gateway link, or an operator through the control socket. Losing the gateway
    /// fails only the gateway's invokes.
    package enum Origin: String, Sendable, Equatable {
        case gateway, `operator`
    }

    /// An idempotency key, as the asker's: the same key from the gateway and from an operator are two.
    package struct Slot: Hashable, Sendable, CustomStringConvertible {
        package let origin: Origin
        package let key: String
        package init(_ origin: Origin, _ key: String) { (self.origin, self.key) = (origin, key) }
        package var description: String { "\(origin.rawValue)/\(key)" }
    }

    /// Who waits for an invoke, for which idempotency slot, and since when (for its latency).
    package struct Waiter: Sendable {
        package var target: AnswerTarget
        package var slot: Slot?
        package var command: String
        package var started: Moment
        /// The paired node it names, once found (the activity feed says whose it was).
        package var node: Fingerprint? = nil
        /// Why it ended as it did, for the activity feed: the rule that denied it, or who answered
        /// its ask and how.
        package var note: String? = nil

        /// Asked on one of these control-socket connections (their clients left).
        package func asked(onControl tokens: Set<Int>) -> Bool {
            if case let .control(token) = target { tokens.contains(token) } else { false }
        }

        /// Asked on this gateway link (it dropped).
        package func asked(onLink generation: Int) -> Bool {
            if case let .gateway(g, _) = target { g == generation } else { false }
        }
    }

    /// An invoke in flight: the node's entry and its asker's, one.
    package struct InFlight: Sendable {
        package let invokeID: String
        package let node: Fingerprint
        /// Only a result from this connection answers it.
        package let connection: ConnectionID
        package let origin: Origin
        package let deadline: Moment
        package var waiter: Waiter
    }

    /// Why a result answered nobody; `rawValue` is the metrics label.
    package enum DropReason: String, Equatable, Sendable, CustomStringConvertible {
        case unknown, otherConnection = "other_connection", late, cancelled

        package var description: String {
            switch self {
            case .unknown: "no such invoke in flight (late, duplicate or unknown)"
            case .otherConnection: "sent on another connection than its invoke went out on"
            case .late: "arrived after the deadline"
            case .cancelled: "arrived after its invoke was cancelled"
            }
        }
    }

    package enum Action: Sendable {
        case send(Invoke, to: ConnectionID)
        case cancel(InvokeCancel, on: ConnectionID)
        /// It timed out: drop it if it still waits to be written to the node.
        case withdraw(invokeID: String, on: ConnectionID)
        case answer(AnswerTarget, InvokeAnswer)
        /// An asker's invoke ended: what, how, and after how long (the metrics).
        case finished(Waiter, outcome: String, seconds: Double, bytes: Int)
        /// The earliest deadline in the book moved sooner.
        case arm(Moment)
        /// How many invokes are held now (when it changed; the metrics).
        case heldCount(Int)
    }
}
