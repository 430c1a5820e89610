import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// When and how a node's socket at an OpenClaw gateway is dialled again, as a value (issue 49 §3):
/// `OpenClawLinks` sleeps and dials, this decides. Its timing is the `openClaw*` limits.
package struct OpenClawRedial: Sendable {
    package struct Timing: Sendable, Equatable {
        package var connecting: Int
        package var backoff: ClosedRange<TimeInterval>
        /// While the gateway holds the device for its operator.
        package var deviceRetry: TimeInterval
        /// A node's call waits this long, and this many at once, for its socket to come back.
        package var eventWait: TimeInterval
        package var waitingEvents: Int
        package var canvasWait: TimeInterval

        package init(_ limits: BridgeSettings.Limits) {
            connecting = limits[.openClawConnecting]
            backoff = limits.seconds(.openClawRedialMinMs)...max(limits.seconds(.openClawRedialMinMs), limits.seconds(.openClawRedialMaxMs))
            deviceRetry = limits.seconds(.openClawDeviceRetryMs)
            eventWait = limits.seconds(.openClawEventWaitMs)
            waitingEvents = limits[.openClawWaitingEvents]
            canvasWait = limits.seconds(.openClawCanvasWaitMs)
        }
    }

    /// What to do after a socket ended.
    package struct Next: Sendable, Equatable {
        /// Seconds to wait before dialling again (0: at once).
        package var wait: TimeInterval
        /// Sign v2 from now on (the gateway does not know v3).
        package var signV2 = false
        /// Forget the device token; the shared token goes instead.
        package var forgetDeviceToken = false
        /// Why a person is needed, when one is (logged as a warning).
        package var operatorHint: String?
        /// What the gateway holds for its operator, shown until it lets the device in.
        package var approval: RuntimeStatus.GatewayApproval?
        /// The hold is new (log it once, not every retry).
        package var newHold = false
        /// A re-offer is a moment's close, not a socket going down: nothing is announced.
        package var quiet = false
    }

    package let timing: Timing
    private var backoff: Backoff
    private var loggedHold: RuntimeStatus.GatewayApproval?

    package init(_ timing: Timing) {
        self.timing = timing
        backoff = Backoff(initial: timing.backoff.lowerBound, maximum: timing.backoff.upperBound, resetAfter: 30)
    }

    /// The socket ended after `lasted` seconds for `retry`'s reason. `jitter` in 0...1 (random in
    /// use). `holdsDeviceToken`: the bridge holds a device token for the node (the gateway issued
    /// one in an earlier `hello-ok`).
    package mutating func ended(
        _ retry: OpenClawNodeSession.Retry, lasted: TimeInterval, holdsDeviceToken: Bool = false, jitter: Double = .random(in: 0...1)
    ) -> Next {
        var next = Next(wait: backoff.wait(lasted: lasted, jitter: jitter))
        switch retry {
        case .signV2:
            (next.signV2, next.wait) = (true, 0)
        case .sharedToken:
            (next.forgetDeviceToken, next.wait) = (true, 0)
        case .deviceToken where holdsDeviceToken:
            next.wait = 0
        case .deviceToken:
            (next.operatorHint, next.wait) = (OpenClawNodeSession.sharedTokenHint, timing.backoff.upperBound)
        case let .operatorNeeded(hint):
            (next.operatorHint, next.wait) = (hint, timing.backoff.upperBound)
        case .reoffer:
            (next.quiet, next.wait) = (true, 0)
        case let .deviceApproval(requestId):
            let held = RuntimeStatus.GatewayApproval.device(requestId)
            (next.approval, next.newHold, next.wait) = (held, held != loggedHold, timing.deviceRetry)
            loggedHold = held
        case .backoff:
            backoff.grow()
        }
        return next
    }
}
