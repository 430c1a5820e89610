import NIOConcurrencyHelpers

/// A one-shot answer: registered before a request goes out, fulfilled when its result comes in
/// (or never twice), awaited by whoever asked. Lets the bridge send from inside the actor without
/// a task per request.
final class Reply<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, Never>?)
        case done(Value)
    }
    private let state = NIOLockedValueBox(State.waiting(nil))

    func fulfill(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = state.withLockedValue { state in
            guard case let .waiting(continuation) = state else { return nil }
            state = .done(value)
            return continuation
        }
        waiter?.resume(returning: value)
    }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLockedValue { state in
                    switch state {
                    case let .done(value): return value
                    case .waiting: state = .waiting(continuation); return nil
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
