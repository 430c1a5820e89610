import Foundation

/// The bridge's book of invokes in flight, sans I/O: requests, results, timeouts and disconnects
/// go in; what to send, and to whom, comes out. The clock is an argument, so deadlines are tested
/// without waiting.
///
/// Rules: at most `maxConcurrentPerNode` invokes per node at once (`RATE_LIMITED` beyond);
/// a result after its deadline is dropped and reported, never delivered twice; when a node goes
/// away its invokes fail with `NODE_NOT_CONNECTED`, and when the gateway goes away every invoke
/// fails with `UNAVAILABLE` at once instead of hanging.
public struct InvokeRouter: Sendable {
    public struct Pending: Equatable, Sendable {
        public let invokeID: String
        /// The gateway's request ID, which the answer must carry.
        public let requestID: String
        public let nodeID: String
        public let command: String
        public let deadline: Date
    }

    public enum Outcome: Equatable, Sendable {
        /// Answer the gateway's request.
        case complete(requestID: String, result: Result)
        /// A result arrived after its invoke timed out (or for no invoke at all): log it.
        case dropped(invokeID: String, nodeID: String, reason: String)
    }

    public enum Result: Equatable, Sendable {
        case ok(JSONValue?)
        case failed(ErrorMessage)
    }

    public let maxConcurrentPerNode: Int
    private var pending: [String: Pending] = [:]
    private var nextID = 0

    public init(maxConcurrentPerNode: Int = 8) {
        self.maxConcurrentPerNode = maxConcurrentPerNode
    }

    public var inFlight: Int { pending.count }

    /// Registers an invoke for `nodeID`; returns the message to send to the node, or the error to
    /// answer with at once.
    public mutating func start(requestID: String, nodeID: String, command: String, params: JSONValue?,
                               timeout: TimeInterval, now: Date) -> Swift.Result<Invoke, ErrorMessage> {
        let busy = pending.values.filter { $0.nodeID == nodeID }.count
        guard busy < maxConcurrentPerNode else {
            return .failure(ErrorMessage(code: "RATE_LIMITED", message: "\(busy) invokes already in flight for this node", retryable: true))
        }
        nextID += 1
        let invokeID = "i\(nextID)"
        pending[invokeID] = Pending(invokeID: invokeID, requestID: requestID, nodeID: nodeID, command: command,
                                    deadline: now.addingTimeInterval(timeout))
        return .success(Invoke(id: invokeID, command: command, params: params))
    }

    /// A node answered. Only the node the invoke went to may answer it.
    public mutating func received(_ result: InvokeResult, from nodeID: String, now: Date) -> Outcome {
        guard let entry = pending[result.id], entry.nodeID == nodeID else {
            return .dropped(invokeID: result.id, nodeID: nodeID, reason: "no such invoke in flight (late, duplicate or unknown)")
        }
        pending[result.id] = nil
        guard entry.deadline > now else {
            return .dropped(invokeID: result.id, nodeID: nodeID, reason: "arrived after the deadline")
        }
        return .complete(requestID: entry.requestID,
                         result: result.ok ? .ok(result.payload) : .failed(result.error ?? ErrorMessage(code: "COMMAND_FAILED", message: "failed")))
    }

    /// Fails every invoke whose deadline has passed with `TIMEOUT`.
    public mutating func expire(now: Date) -> [Outcome] {
        let due = pending.values.filter { $0.deadline <= now }
        for entry in due { pending[entry.invokeID] = nil }
        return due.sorted { $0.deadline < $1.deadline }.map {
            .complete(requestID: $0.requestID, result: .failed(ErrorMessage(code: "TIMEOUT", message: "\($0.command) did not answer in time", retryable: true)))
        }
    }

    /// The node's connection ended: its invokes cannot complete.
    public mutating func nodeDisconnected(_ nodeID: String) -> [Outcome] {
        failAll(where: { $0.nodeID == nodeID }, ErrorMessage(code: "NODE_NOT_CONNECTED", message: "the node disconnected", retryable: true))
    }

    /// The gateway link dropped: nobody is waiting for any answer any more.
    public mutating func gatewayLost() -> [Outcome] {
        failAll(where: { _ in true }, ErrorMessage(code: "UNAVAILABLE", message: "the gateway link dropped", retryable: true))
    }

    private mutating func failAll(where predicate: (Pending) -> Bool, _ error: ErrorMessage) -> [Outcome] {
        let gone = pending.values.filter(predicate)
        for entry in gone { pending[entry.invokeID] = nil }
        return gone.sorted { $0.invokeID < $1.invokeID }.map { .complete(requestID: $0.requestID, result: .failed(error)) }
    }
}
