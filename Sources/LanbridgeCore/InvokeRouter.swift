import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol

/// The bridge's book of invokes in flight, sans I/O: requests, results, timeouts and disconnects
/// go in; what to send, and to whom, comes out. The clock is an argument, so deadlines are tested
/// without waiting.
///
/// Rules: at most `maxConcurrentPerNode` invokes per node at once (`RATE_LIMITED` beyond);
/// a result after its deadline is dropped and reported, never delivered twice; when a node goes
/// away its invokes fail with `NODE_NOT_CONNECTED`, and when the gateway goes away every invoke
/// it asked for fails with `UNAVAILABLE` at once instead of hanging.
///
/// An answer belongs to its request: invoke IDs carry a random prefix drawn once per router (so
/// once per bridge process) and never repeat across restarts, and a result counts only when it
/// comes back on the connection its invoke went out on (PROTOCOL.md §9.4).
public struct InvokeRouter: Sendable {
    /// Who asked: the gateway link, or an operator through the control socket. Losing the gateway
    /// fails only the gateway's invokes.
    public enum Origin: String, Sendable, Equatable {
        case gateway, `operator`
    }

    public struct Pending: Equatable, Sendable {
        public let invokeID: String
        /// The asker's request ID, which the answer must carry.
        public let requestID: String
        public let nodeID: String
        public let command: String
        public let origin: Origin
        public let deadline: Moment
        /// The connection the invoke went out on; only a result from there answers it.
        public let connection: Int
    }

    public enum Outcome: Equatable, Sendable {
        /// Answer the asker's request.
        case complete(requestID: String, result: Result)
        /// A result arrived after its invoke timed out (or for no invoke at all): log it.
        case dropped(invokeID: String, nodeID: String, reason: DropReason)
    }

    /// Why a result answered nobody; `rawValue` is the metrics label.
    public enum DropReason: String, Equatable, Sendable, CustomStringConvertible {
        case unknown, otherConnection = "other_connection", late, cancelled

        public var description: String {
            switch self {
            case .unknown: "no such invoke in flight (late, duplicate or unknown)"
            case .otherConnection: "sent on another connection than its invoke went out on"
            case .late: "arrived after the deadline"
            case .cancelled: "arrived after its invoke was cancelled"
            }
        }
    }

    public enum Result: Equatable, Sendable {
        case ok(InvokePayload)
        case failed(ErrorMessage)
    }

    public var maxConcurrentPerNode: Int
    private var pending: [String: Pending] = [:]
    private var perNode: [String: Int] = [:]
    private var nextID = 0
    /// "i" and 12 random hex digits: this process's invoke IDs are `<prefix>.<n>`.
    public let idPrefix: String

    public init(maxConcurrentPerNode: Int = 8, idPrefix: String = InvokeRouter.randomPrefix()) {
        self.maxConcurrentPerNode = maxConcurrentPerNode
        self.idPrefix = idPrefix
    }

    /// 48 random bits: two bridge processes share a prefix about once in 2^24 restarts of a pair.
    public static func randomPrefix() -> String { "i" + Hex.encode(SecureRandom.bytes(6)) }

    public var inFlight: Int { pending.count }

    public func inFlight(forNode nodeID: String) -> Int { perNode[nodeID, default: 0] }

    /// The earliest deadline in flight, for the caller's timer.
    public var nextDeadline: Moment? { pending.values.map(\.deadline).min() }

    /// Registers an invoke for `nodeID`; returns the message to send to the node, or the error to
    /// answer with at once.
    public mutating func start(requestID: String, nodeID: String, connection: Int, command: String, params: JSONValue?,
                               timeout: TimeInterval, origin: Origin = .gateway, now: Moment) -> Swift.Result<Invoke, ErrorMessage> {
        let busy = perNode[nodeID, default: 0]
        guard busy < maxConcurrentPerNode else {
            return .failure(ErrorMessage(code: ErrorMessage.rateLimited, message: "\(busy) invokes already in flight for this node",
                                         details: ["nodeId": .string(nodeID), "command": .string(command), "limit": "concurrentInvokes"],
                                         retryable: true, retryAfterMs: 100))
        }
        nextID += 1
        let invokeID = "\(idPrefix).\(nextID)"
        pending[invokeID] = Pending(invokeID: invokeID, requestID: requestID, nodeID: nodeID, command: command,
                                    origin: origin, deadline: now.addingTimeInterval(timeout), connection: connection)
        perNode[nodeID] = busy + 1
        return .success(Invoke(id: invokeID, command: command, params: params, timeoutMs: Int(timeout * 1000)))
    }

    /// A node answered. Only the node the invoke went to may answer it. A node's own failure
    /// reaches the asker as `COMMAND_FAILED` (or `TIMEOUT`, if the node timed out itself), with
    /// the node's error in `details.nodeError`.
    public mutating func received(_ result: InvokeResult, from nodeID: String, connection: Int, now: Moment) -> Outcome {
        received(result.received, from: nodeID, connection: connection, now: now)
    }

    /// A node's answer, on `connection`. `size` is the whole message's; over `limit`, a successful
    /// result is refused with PAYLOAD_TOO_LARGE (the node stays connected).
    public mutating func received(_ result: InvokeResult.Received, from nodeID: String, connection: Int, now: Moment,
                                  size: Int = 0, limit: Int = .max) -> Outcome {
        guard let entry = pending[result.id], entry.nodeID == nodeID else {
            return .dropped(invokeID: result.id, nodeID: nodeID, reason: cancelled.contains(result.id) ? .cancelled : .unknown)
        }
        guard entry.connection == connection else {
            // A handler of an earlier connection finishing late: its answer is not for this request.
            return .dropped(invokeID: result.id, nodeID: nodeID, reason: .otherConnection)
        }
        remove(entry)
        guard entry.deadline > now else {
            return .dropped(invokeID: result.id, nodeID: nodeID, reason: .late)
        }
        if result.ok, size > limit {
            return .complete(requestID: entry.requestID, result: .failed(ErrorMessage(
                code: ErrorMessage.payloadTooLarge, message: "the result is \(size) bytes; the limit is \(limit)",
                details: details(entry, ["bytes": .number(Double(size)), "limit": .number(Double(limit))]), retryable: false)))
        }
        if result.ok { return .complete(requestID: entry.requestID, result: .ok(result.payload)) }
        let nodeError = result.error ?? ErrorMessage(code: ErrorMessage.commandFailed, message: "the node reported a failure")
        let timedOut = nodeError.code == ErrorMessage.timeout
        return .complete(requestID: entry.requestID, result: .failed(ErrorMessage(
            code: timedOut ? ErrorMessage.timeout : ErrorMessage.commandFailed,
            message: "\(entry.command) failed on the node: \(nodeError.message)",
            details: details(entry, ["nodeError": Self.json(nodeError)]), retryable: timedOut || nodeError.retryable == true,
            retryAfterMs: nodeError.retryAfterMs)))
    }

    /// The invoke in flight for the asker's `requestID`, if any.
    public func pending(requestID: String) -> Pending? { pending.values.first { $0.requestID == requestID } }

    /// The asker gave up: the invoke is answered `CANCELLED` now, and the caller tells the node
    /// (`InvokeCancel` on `pending.connection`). A result that comes later is dropped as such.
    public mutating func cancel(requestID: String) -> (pending: Pending, outcome: Outcome)? {
        guard let entry = pending(requestID: requestID) else { return nil }
        remove(entry)
        cancelled.insert(entry.invokeID)
        cancelledOrder.append(entry.invokeID)
        if cancelledOrder.count > Self.cancelledRemembered { cancelled.remove(cancelledOrder.removeFirst()) }
        return (entry, .complete(requestID: requestID, result: .failed(ErrorMessage(
            code: ErrorMessage.cancelled, message: "\(entry.command) was cancelled", details: details(entry), retryable: false))))
    }

    /// Cancelled invokes remembered, so a result that still comes is reported as such (bounded).
    private var cancelled: Set<String> = []
    private var cancelledOrder: [String] = []
    package static let cancelledRemembered = 1024

    /// Fails every invoke whose deadline has passed with `TIMEOUT`.
    public mutating func expire(now: Moment) -> [Outcome] {
        let due = pending.values.filter { $0.deadline <= now }
        for entry in due { remove(entry) }
        return due.sorted { $0.deadline < $1.deadline }.map {
            .complete(requestID: $0.requestID, result: .failed(ErrorMessage(
                code: ErrorMessage.timeout, message: "\($0.command) did not answer in time", details: details($0), retryable: true)))
        }
    }

    /// The node sent something that is not strict JSON where a result may have been. Its answer to
    /// `invokeID` fails at once; if the ID could not be read, so do all of the node's invokes in
    /// flight (a node that sends malformed results is broken; waiting out timeouts helps nobody).
    public mutating func malformedResult(invokeID: String?, from nodeID: String, connection: Int, reason: String) -> [Outcome] {
        let message = "the node's result is malformed: \(reason)"
        if let invokeID, let entry = pending[invokeID], entry.nodeID == nodeID, entry.connection == connection {
            remove(entry)
            return [.complete(requestID: entry.requestID, result: .failed(ErrorMessage(
                code: ErrorMessage.invalidResult, message: message, details: details(entry), retryable: false)))]
        }
        return failAll(where: { $0.nodeID == nodeID && $0.connection == connection }, code: ErrorMessage.invalidResult, message, retryable: false)
    }

    /// One connection ended (a node that reconnected keeps its newer one): what went out on it
    /// cannot be answered any more.
    public mutating func connectionClosed(_ connection: Int) -> [Outcome] {
        failAll(where: { $0.connection == connection }, code: ErrorMessage.nodeNotConnected, "the node's connection closed before it answered")
    }

    /// The gateway link dropped: nobody is waiting for the gateway's invokes any more.
    public mutating func gatewayLost() -> [Outcome] {
        failAll(where: { $0.origin == .gateway }, code: ErrorMessage.unavailable, "the gateway link dropped")
    }

    /// The node was revoked or the bridge is stopping.
    public mutating func cancelAll(forNode nodeID: String?, code: String, _ message: String) -> [Outcome] {
        failAll(where: { nodeID == nil || $0.nodeID == nodeID }, code: code, message)
    }

    private mutating func failAll(where predicate: (Pending) -> Bool, code: String, _ message: String, retryable: Bool = true) -> [Outcome] {
        let gone = pending.values.filter(predicate)
        for entry in gone { remove(entry) }
        return gone.sorted { $0.invokeID < $1.invokeID }.map {
            .complete(requestID: $0.requestID, result: .failed(ErrorMessage(code: code, message: message, details: details($0), retryable: retryable)))
        }
    }

    private mutating func remove(_ entry: Pending) {
        pending[entry.invokeID] = nil
        let left = perNode[entry.nodeID, default: 1] - 1
        perNode[entry.nodeID] = left > 0 ? left : nil
    }

    private func details(_ entry: Pending, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        .object(["nodeId": .string(entry.nodeID), "command": .string(entry.command)].merging(extra) { $1 })
    }

    private static func json(_ error: ErrorMessage) -> JSONValue {
        var fields: [String: JSONValue] = ["code": .string(error.code), "message": .string(error.message)]
        if let details = error.details { fields["details"] = details }
        return .object(fields)
    }
}
