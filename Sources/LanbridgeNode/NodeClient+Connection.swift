#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import Logging
import NIOCore
import NIOPosix

/// One connection, dialled, served and ended: the session (`NodeSession`) decides, this carries out.
extension NodeClient {
    /// A connection whose handshake finished with the right key, from the race.
    struct Dialed: Sendable {
        let connection: NodeConnection
        let bridgeKey: [UInt8]
        let handshakeHash: [UInt8]
    }

    func connectOnce(configured: [ReachableAddress], invite: InviteURI?) async throws -> String {
        let candidates = candidates(configured: configured, invite: invite)
        let (transport, identity, eventLoop) = (self.transport, self.identity, self.eventLoop)
        let expected = pin?.publicKey.bytes
        let dialed: Dialed, address: ReachableAddress
        do {
            (dialed, address) = try await BridgeDialer.race(
                candidates,
                attempt: { address in
                    let connection = try await transport.connect(host: address.host, port: address.port, identity: identity, invite: invite, on: eventLoop)
                    do {
                        var iterator = connection.events.makeAsyncIterator()
                        guard case let .established(bridgeKey, handshakeHash) = try await iterator.next() else {
                            throw invite == nil
                                ? DialError.closedDuringHandshake
                                : ClientError.inviteRefused("closed before the handshake finished (used, expired or unknown invite)")
                        }
                        try Self.checkBridgeKey(bridgeKey, pinned: expected, invite: invite)
                        return Dialed(connection: connection, bridgeKey: bridgeKey, handshakeHash: handshakeHash)
                    } catch {
                        connection.close()
                        throw error
                    }
                }, discard: { $0.connection.close() })
        } catch let failed as BridgeDialer.AllFailed {
            // One address: its verdict stands (a wrong key is someone in the middle). Several: a
            // wrong key at one (a stale address now used by another bridge) fails only that one.
            if candidates.count == 1, let only = failed.failures.first?.error as? ClientError { throw only }
            // A refused invite is refused wherever it is dialled.
            for case let .inviteRefused(why) in failed.failures.compactMap({ $0.error as? ClientError }) { throw ClientError.inviteRefused(why) }
            throw failed
        }
        return try await serve(dialed, at: address, invite: invite)
    }

    enum DialError: Error, CustomStringConvertible {
        /// The bridge (or whatever answered) closed before the handshake finished.
        case closedDuringHandshake
        var description: String { "the connection closed during the handshake" }
    }

    func serve(_ dialed: Dialed, at address: ReachableAddress, invite: InviteURI?) async throws -> String {
        let connection = dialed.connection
        self.connection = connection
        sessionGeneration += 1
        let bridgeKey = PublicKey(bytes: dialed.bridgeKey)
        session = NodeSession(
            .init(
                details: configuration.details, handshakeHash: dialed.handshakeHash, pinned: pin != nil,
                inviteSecret: invite?.secret, nodeNonce: SecureRandom.bytes(VerificationCode.nonceLength), foreground: foreground))
        defer {
            connection.close()
            handleQuietly(.closed)
            self.connection = nil
            session = nil
            deadlineTimer?.task.cancel()
            deadlineTimer = nil
        }
        // The stream's `next()` is nonisolated: without a preference it runs on Swift's global
        // executor, two thread hops per message (there and back to the event loop). With the
        // event loop as the task's executor, a message is read and answered on one thread.
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), let executor = eventLoopExecutor as? EventLoopTaskExecutor {
            try await withTaskExecutorPreference(executor) {
                try await receive(connection, bridgeKey: bridgeKey, address: address, invite: invite)
            }
        } else {
            try await receive(connection, bridgeKey: bridgeKey, address: address, invite: invite)
        }
        return "connection closed"
    }

    func receive(_ connection: NodeConnection, bridgeKey: PublicKey?, address: ReachableAddress, invite: InviteURI?) async throws {
        for try await event in connection.events {
            guard case let .message(bytes) = event, let message = try? SessionMessages.decode(bytes) else { continue }
            try await perform(handle(.received(message)), bridgeKey: bridgeKey, address: address, invite: invite)
        }
    }

    /// Feeds the session an event, now; its actions, to carry out.
    func handle(_ event: NodeSession.Event) -> [NodeSession.Action] {
        guard var current = session else {
            if case let .request(id, _, _, _) = event {  // no connection: the call is answered at once
                answer(id, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "not connected to the bridge", retryable: true)))
            }
            return []
        }
        session = nil  // the only reference while it changes: its tables are changed in place, not copied
        let actions = current.handle(event, now: .now)
        session = current
        return actions
    }

    /// For events that cannot fail the session (the app's, a handler's, the clock's, the close):
    /// what is bookkeeping is done now, in this turn; messages go out after, in order, on the
    /// connection open now.
    func handleQuietly(_ event: NodeSession.Event) {
        var messages: [NodeSession.Action] = []
        for action in handle(event) {
            switch action {
            case .send: messages.append(action)
            case let .cancelHandler(key): running.removeValue(forKey: key)?.cancel()
            case let .answer(id, result): answer(id, result)
            default: messages.append(action)  // not produced by these events; carried out in order all the same
            }
        }
        rescheduleDeadline()
        guard !messages.isEmpty, let connection else { return }
        let generation = sessionGeneration
        Task { try? await self.perform(messages, generation: generation, on: connection) }
    }

    /// Carries out what the session decided. A failure ends the connection by throwing.
    func perform(
        _ actions: [NodeSession.Action], bridgeKey: PublicKey? = nil, address: ReachableAddress? = nil, invite: InviteURI? = nil,
        generation: Int? = nil, on connection: NodeConnection? = nil
    ) async throws {
        let connection = connection ?? self.connection
        let generation = generation ?? sessionGeneration
        for action in actions {
            switch action {
            case let .send(message):
                try? await connection?.send(SessionMessages.encode(message))
            case .authorize:
                try await connection?.authorize()
            case let .pin(bridgeName, addresses):
                if let bridgeKey, let address {
                    try remember(bridgeKey, name: bridgeName, address: address, addresses: addresses ?? invite.map { $0.addresses.map(\.description) })
                }
            case let .startHandler(key, invoke):
                guard let connection else { continue }
                running[key] = startHandler {
                    let result = await self.run(invoke)
                    await self.finished(key, result, generation: generation, on: connection)
                }
            case let .cancelHandler(key):
                running.removeValue(forKey: key)?.cancel()
            case let .answer(id, result):
                answer(id, result)
            case let .canvas(access):
                canvas = access
                emit.yield(.canvas(access))
            case let .notify(notice):
                switch notice {
                case let .verificationCode(code, requestId): emit.yield(.verificationCode(code, requestId: requestId))
                case let .pairingPending(requestId): emit.yield(.pairingPending(requestId: requestId))
                case let .connected(bridgeName): emit.yield(.connected(bridgeName: bridgeName))
                case let .bridgeError(code, message): emit.yield(.error(code: code, message: message))
                }
            case let .end(failure):
                switch failure {
                case .revoked:
                    try? store.forgetPin()
                    pin = nil
                    throw ClientError.revoked
                case .rejected: throw ClientError.pairingRejected
                case .expired: throw ClientError.pairingExpired
                case .replaced: throw ClientError.replaced
                case let .inviteRefused(why): throw ClientError.inviteRefused(why)
                }
            }
        }
        rescheduleDeadline()
    }

    /// One timer, for the session's earliest request deadline.
    func rescheduleDeadline() {
        guard let next = session?.nextDeadline else {
            deadlineTimer?.task.cancel()
            deadlineTimer = nil
            return
        }
        guard deadlineTimer?.deadline != next else { return }
        deadlineTimer?.task.cancel()
        let task = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, next.nanoseconds)))) {
            Task { await self.deadlinePassed() }
            return ()
        }
        deadlineTimer = (next, task)
    }

    func deadlinePassed() {
        deadlineTimer = nil
        handleQuietly(.tick)
    }

    static func checkBridgeKey(_ bridgeKey: [UInt8], pinned: [UInt8]?, invite: InviteURI?) throws {
        let presented = Fingerprint(publicKey: bridgeKey)
        if let pinned, pinned != bridgeKey {
            throw ClientError.bridgeKeyMismatch(expected: Fingerprint(publicKey: pinned).description, presented: presented.description)
        }
        if let invite, invite.bridgeFingerprint != presented {
            throw ClientError.bridgeKeyMismatch(expected: invite.bridgeFingerprint.description, presented: presented.description)
        }
    }

    /// Paired and connected: pins the bridge, or remembers where it answered and what it listed.
    func remember(_ key: PublicKey, name: String, address: ReachableAddress, addresses: [String]?) throws {
        let listed = addresses.map { ReachableAddress.list($0).map(\.description) }
        if pin == nil {
            let newPin = BridgePin(
                publicKey: key, fingerprint: key.fingerprint, host: address.host, port: address.port,
                addresses: listed, bridgeName: name, pairedAt: Date())
            try store.save(newPin)
            pin = newPin
            emit.yield(.paired(bridgeFingerprint: key.fingerprint.description))
        } else if var known = pin, known.host != address.host || known.port != address.port || (listed != nil && listed != known.addresses) {
            (known.host, known.port) = (address.host, address.port)
            if let listed { known.addresses = listed }
            // Best effort: a store that cannot be written only loses what was learned.
            do { try store.save(known) } catch { logger.warning("could not remember the bridge's addresses: \(error)") }
            pin = known
        }
    }

    /// The app's handler for an invoke, its answer as a result.
    func run(_ invoke: Invoke) async -> InvokeResult {
        let result: InvokeResult
        if let handler = handlers[invoke.command] {
            do {
                result = InvokeResult(id: invoke.id, payload: try await handler(invoke.params))
            } catch let error as LanbridgeError {
                result = InvokeResult(id: invoke.id, error: error.errorMessage)
            } catch let error as ErrorMessage {
                result = InvokeResult(id: invoke.id, error: error)
            } catch {
                result = InvokeResult(id: invoke.id, error: ErrorMessage(code: "COMMAND_FAILED", message: "\(error)"))
            }
        } else {
            result = InvokeResult(id: invoke.id, error: ErrorMessage(code: "UNKNOWN_COMMAND", message: "this node has no \(invoke.command) command"))
        }
        return result
    }

    /// Starts an invoke's handler: on the client's event loop (a quick handler answers without a
    /// thread hop), or on Swift's concurrent executor when the configuration says so.
    func startHandler(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        if configuration.handlersOnEventLoop, #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            return Task(executorPreference: eventLoopExecutor as? EventLoopTaskExecutor, operation: body)
        }
        return Task(operation: body)
    }

    /// A handler's answer goes back on the connection its invoke came on, and only if the session
    /// still waits for it (not cancelled, the connection not ended).
    func finished(_ key: Int, _ result: InvokeResult, generation: Int, on connection: NodeConnection) async {
        guard generation == sessionGeneration else { return }
        running[key] = nil
        try? await perform(handle(.handlerFinished(key: key, result)), generation: generation, on: connection)
    }
}
