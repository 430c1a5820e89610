/// One connection of a node to its bridge, after the Noise handshake, as a value: what arrives and
/// what the app does go in as events, what to do comes out as actions (PROTOCOL.md Appendix C
/// draws the table). No I/O, no clock and no randomness of its own: the node SDK's `NodeClient`
/// carries the actions out, the time comes with each event, the pairing nonce with the setup.
///
/// A session ends once (the connection closed, or the bridge said something after which retrying
/// is pointless); after that every event is ignored.
public struct NodeSession: Sendable {
    public struct Setup: Sendable {
        /// Who this node says it is, for a pairing request or an invite.
        public var details: NodeDetails
        /// The Noise handshake's hash, which the verification code binds.
        public var handshakeHash: [UInt8]
        /// The node already holds a pin for this bridge (it paired before).
        public var pinned: Bool
        /// The secret of the invite this connection redeems, if any.
        public var inviteSecret: [UInt8]?
        /// Fresh randomness for the pairing commitment (`VerificationCode.nonceLength` bytes).
        public var nodeNonce: [UInt8]
        /// The app's state at connection time.
        public var foreground: Bool

        public init(details: NodeDetails, handshakeHash: [UInt8], pinned: Bool, inviteSecret: [UInt8]?, nodeNonce: [UInt8], foreground: Bool) {
            (self.details, self.handshakeHash, self.pinned, self.inviteSecret, self.nodeNonce, self.foreground) = (
                details, handshakeHash, pinned, inviteSecret, nodeNonce, foreground
            )
        }
    }

    public enum Phase: Equatable, Sendable {
        /// Handshake done; the bridge's `welcome` not yet heard.
        case awaitingWelcome
        /// `invite.redeem` sent.
        case redeemingInvite
        /// `pair.request` sent with the commitment.
        case requestingPairing
        /// `pair.reveal` sent; the code is known.
        case revealed(code: String)
        /// The bridge recorded the request; the operator decides.
        case pending(requestId: String)
        /// Paired and authorised: invokes run, calls may be made.
        case connected
        case ended
    }

    /// Why the node should stop, not retry.
    public enum Failure: Equatable, Sendable {
        /// The bridge no longer knows this node (revoked, or a welcome without `paired` to a pinned
        /// node): the pin is to be forgotten.
        case revoked
        case rejected
        case expired
        /// Another connection with this node's key replaced this one.
        case replaced
        case inviteRefused(String)
    }

    /// What a person or the app is told.
    public enum Notice: Equatable, Sendable {
        case verificationCode(String, requestId: String)
        case pairingPending(requestId: String)
        case connected(bridgeName: String)
        case bridgeError(code: String, message: String)
    }

    public enum Event: Sendable {
        /// A message from the bridge, decoded once by the handler.
        case received(any SessionMessage)
        /// An invoke's handler returned (or threw, already made an `InvokeResult`).
        case handlerFinished(key: Int, InvokeResult)
        /// The app asks the bridge something answered by `id` (`gateway.call`, `push.register`,
        /// `canvas.refresh`); no answer by `deadline` is a `TIMEOUT`.
        case request(id: String, message: any SessionMessage, deadline: Moment, timeoutText: String)
        /// The app sends an event to the gateway.
        case appEvent(NodeEvent)
        case foreground(Bool)
        /// Time passed: deadlines at or before the event's `now` have passed.
        case tick
        /// The connection ended.
        case closed
    }

    public enum Action: Sendable {
        case send(any SessionMessage)
        /// The transport may carry the app's traffic from now on (paired).
        case authorize
        /// Paired and connected: pin the bridge (first pairing) or remember what it listed.
        case pin(bridgeName: String, addresses: [String]?)
        /// Run the app's handler for the invoke; `key` names the run.
        case startHandler(key: Int, Invoke)
        /// The asker gave up, or the connection ended: cancel the run (its answer is not sent).
        case cancelHandler(key: Int)
        /// The answer to the app's request `id`.
        case answer(id: String, Result<JSONValue?, ErrorMessage>)
        case canvas(CanvasAccess)
        case notify(Notice)
        /// Stop: retrying would not help.
        case end(Failure)
    }

    public private(set) var phase: Phase = .awaitingWelcome
    private let setup: Setup
    private var foreground: Bool
    private var code: String?
    private var bridgeName = ""
    /// Handler runs under way: key → invoke ID (an ID the bridge repeats gets a run of its own).
    private var running: [Int: String] = [:]
    private var nextKey = 0
    /// Requests waiting for their answer, and when they time out.
    private var waiting: [String: (deadline: Moment, timeoutText: String)] = [:]

    public init(_ setup: Setup) {
        self.setup = setup
        foreground = setup.foreground
    }

    public var isConnected: Bool { phase == .connected }
    /// The earliest request deadline, for the driver's timer.
    public var nextDeadline: Moment? { waiting.values.map(\.deadline).min() }
    /// Handler runs under way (their keys).
    public var runningKeys: [Int] { running.keys.sorted() }

    public mutating func handle(_ event: Event, now: Moment) -> [Action] {
        guard phase != .ended else { return [] }
        switch event {
        case let .received(message): return received(message)
        case let .handlerFinished(key, result):
            // Cancelled (invoke.cancel) or unknown: nobody waits for it.
            guard running.removeValue(forKey: key) != nil else { return [] }
            return [.send(result)]
        case let .request(id, message, deadline, timeoutText):
            guard phase == .connected else {
                return [.answer(id: id, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "not connected to the bridge", retryable: true)))]
            }
            waiting[id] = (deadline, timeoutText)
            return [.send(message)]
        case let .appEvent(nodeEvent):
            return phase == .connected ? [.send(nodeEvent)] : []
        case let .foreground(value):
            foreground = value
            return phase == .connected ? [.send(AppState(foreground: value))] : []
        case .tick:
            let due = waiting.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
            return due.map { id, entry in
                waiting[id] = nil
                return .answer(id: id, .failure(ErrorMessage(code: ErrorMessage.timeout, message: "no answer within \(entry.timeoutText)", retryable: true)))
            }
        case .closed:
            return end(nil)
        }
    }

    // MARK: - Messages

    private mutating func received(_ message: any SessionMessage) -> [Action] {
        switch message {
        case let welcome as Welcome:
            guard phase == .awaitingWelcome else { return [] }
            bridgeName = welcome.bridgeName
            if welcome.paired { return becomeConnected(addresses: welcome.addresses, canvas: welcome.canvas) }
            if let secret = setup.inviteSecret {
                phase = .redeemingInvite
                return [.send(InviteRedeem(secret: Hex.encode(secret), details: setup.details))]
            }
            // Pinned, but the bridge no longer knows us.
            if setup.pinned { return end(.revoked) }
            phase = .requestingPairing
            let commitment = VerificationCode.commitment(handshakeHash: setup.handshakeHash, nodeNonce: setup.nodeNonce)
            return [.send(PairRequest(details: setup.details, commitment: Hex.encode(commitment)))]
        case let challenge as PairChallenge:
            guard phase == .requestingPairing, let bridgeNonce = try? Hex.decode(challenge.nonce) else { return [] }
            let code = VerificationCode.code(handshakeHash: setup.handshakeHash, nodeNonce: setup.nodeNonce, bridgeNonce: bridgeNonce)
            self.code = code
            phase = .revealed(code: code)
            return [.send(PairReveal(nonce: Hex.encode(setup.nodeNonce)))]
        case let pending as PairPending:
            // The code is shown only now that the bridge has checked the commitment and recorded
            // the same code, so the operator always finds it in `lanbridge nodes pending`.
            guard case .revealed = phase else { return [] }
            phase = .pending(requestId: pending.requestId)
            return (code.map { [Action.notify(.verificationCode($0, requestId: pending.requestId))] } ?? [])
                + [.notify(.pairingPending(requestId: pending.requestId))]
        case let resolved as PairResolved:
            switch phase {
            case .redeemingInvite, .requestingPairing, .revealed, .pending: break
            default: return []
            }
            switch resolved.outcome {
            case .approved: return becomeConnected(addresses: resolved.addresses, canvas: resolved.canvas)
            case .rejected: return end(.rejected)
            case .expired: return end(.expired)
            }
        case let ping as Ping:
            return [.send(Pong(id: ping.id))]
        case is Revoked:
            return end(.revoked)
        case let invoke as Invoke:
            // Only a bridge this node is paired with may run its commands: not one still pairing.
            guard phase == .connected else { return [] }
            nextKey += 1
            running[nextKey] = invoke.id
            return [.startHandler(key: nextKey, invoke)]
        case let cancel as InvokeCancel:
            let keys = running.filter { $0.value == cancel.id }.map(\.key).sorted()
            for key in keys { running[key] = nil }
            return keys.map { .cancelHandler(key: $0) }
        case let result as GatewayCallResult:
            return answer(
                result.id,
                result.ok
                    ? .success(result.payload)
                    : .failure(result.error ?? ErrorMessage(code: ErrorMessage.commandFailed, message: "failed")))
        case let result as PushResult:
            return answer(result.id, result.ok ? .success(nil) : .failure(result.error ?? ErrorMessage(code: ErrorMessage.commandFailed, message: "failed")))
        case let grant as CanvasGrant:
            guard phase == .connected else { return [] }
            if let access = grant.canvas { return [.canvas(access)] + answer(grant.id, .success(nil)) }
            return answer(grant.id, .failure(grant.error ?? ErrorMessage(code: ErrorMessage.unavailable, message: "no canvas")))
        case let error as ErrorMessage:
            let notice = Action.notify(.bridgeError(code: error.code, message: error.message))
            switch error.code {
            case ErrorMessage.pairingExpired: return [notice] + end(.expired)
            case ErrorMessage.pairingRejected: return [notice] + end(.rejected)
            case ErrorMessage.replaced: return [notice] + end(.replaced)
            case ErrorMessage.pairingFailed where setup.inviteSecret != nil: return [notice] + end(.inviteRefused(error.message))
            default: return [notice]
            }
        default:
            return []
        }
    }

    private mutating func becomeConnected(addresses: [String]?, canvas: CanvasAccess?) -> [Action] {
        phase = .connected
        return [
            .authorize, .pin(bridgeName: bridgeName, addresses: addresses), .send(AppState(foreground: foreground)),
            .notify(.connected(bridgeName: bridgeName)),
        ] + (canvas.map { [.canvas($0)] } ?? [])
    }

    /// An answer for a request still waiting; anything else (late, unknown, repeated) is dropped.
    private mutating func answer(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) -> [Action] {
        guard waiting.removeValue(forKey: id) != nil else { return [] }
        return [.answer(id: id, result)]
    }

    /// The session's end: every run cancelled, every request answered `UNAVAILABLE`.
    private mutating func end(_ failure: Failure?) -> [Action] {
        phase = .ended
        let cancels = running.keys.sorted().map { Action.cancelHandler(key: $0) }
        let answers = waiting.keys.sorted().map {
            Action.answer(id: $0, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the connection closed", retryable: true)))
        }
        running.removeAll()
        waiting.removeAll()
        return cancels + answers + (failure.map { [.end($0)] } ?? [])
    }
}
