import LanbridgeProtocol

/// What waits in the core for something other than its node's answer: invokes held for the node
/// (`HeldInvokes`) and invokes asked of the operator (`AskedInvokes`). The ends they share are
/// written once, here.
package protocol WaitingInvokes {
    associatedtype Entry
    associatedtype Ending
    static func waiter(of entry: Entry) -> InvokeBook.Waiter
    static func ending(_ entry: Entry, _ error: ErrorMessage) -> Ending
    /// The entries that match, no longer waiting.
    mutating func remove(where matches: (Entry) -> Bool) -> [Entry]
}

extension WaitingInvokes {
    /// The operator's control-socket clients that asked these left: nothing runs later that
    /// nobody waits for.
    package mutating func askersLeft(_ tokens: Set<Int>) -> [Ending] {
        remove { Self.waiter(of: $0).asked(onControl: tokens) }
            .map { Self.ending($0, ErrorMessage(code: ErrorMessage.unavailable, message: "the asker left", retryable: true)) }
    }

    /// The gateway link of `generation` dropped: what it asked is dropped, not run later.
    package mutating func gatewayLeft(_ generation: Int) -> [Ending] {
        remove { Self.waiter(of: $0).asked(onLink: generation) }
            .map { Self.ending($0, ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway link dropped", retryable: true)) }
    }
}
