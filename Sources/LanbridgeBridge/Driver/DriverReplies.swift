import LanbridgeCore
import LanbridgeProtocol
import NIOCore

/// The answers the driver owes, by token, confined to its loop: the operator's control requests
/// (with the socket connection each came on) and the canvas relay's questions about capabilities.
/// The core answers by token (`.answer(.control(token))`, `.canvasUsed(reply)`); DriverRepliesTests.
struct DriverReplies {
    private var control: [Int: (promise: EventLoopPromise<InvokeAnswer>, client: Int)] = [:]
    private var canvas: [Int: EventLoopPromise<CanvasUse>] = [:]
    private var next = 0

    /// A control request's token.
    mutating func awaitControl(_ promise: EventLoopPromise<InvokeAnswer>, client: Int) -> Int {
        next += 1
        control[next] = (promise, client)
        return next
    }

    mutating func answerControl(_ token: Int, _ answer: InvokeAnswer) {
        control.removeValue(forKey: token)?.promise.succeed(answer)
    }

    /// What a control client that went away still waits for.
    func tokens(of client: Int) -> Set<Int> { Set(control.filter { $0.value.client == client }.keys) }

    /// A capability question's token.
    mutating func awaitCanvas(_ promise: EventLoopPromise<CanvasUse>) -> Int {
        next += 1
        canvas[next] = promise
        return next
    }

    mutating func answerCanvas(_ reply: Int, _ use: CanvasUse) {
        canvas.removeValue(forKey: reply)?.succeed(use)
    }

    /// The bridge stops: every control request still waiting hears so.
    mutating func stop() {
        for (_, request) in control { request.promise.succeed(.failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge is stopping"))) }
        control.removeAll()
    }
}
