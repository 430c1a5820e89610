import CAvahiClient
import FoundationEssentials
import Logging

/// An Avahi client on its own threaded poll, kept alive across avahi-daemon restarts.
///
/// Avahi calls back on its poll thread. The callbacks are capture-free closures that reach this
/// object through `userdata`; everything else that touches Avahi takes the poll lock. When the
/// daemon goes away (`AVAHI_ERR_DISCONNECTED`) the client is freed and a new one is created with
/// `AVAHI_CLIENT_NO_FAIL`, which waits for the daemon to come back.
final class AvahiClientLoop: @unchecked Sendable {
    // All mutable state below is touched only on the poll thread or under the poll lock.
    private let poll: OpaquePointer
    private(set) var client: OpaquePointer?
    private let logger: Logger
    /// Called on the poll thread with every client state change.
    var onState: (OpaquePointer, AvahiClientState) -> Void = { _, _ in }
    /// Called on the poll thread after the client was lost, before a new one is made.
    var onLost: () -> Void = {}

    init(logger: Logger) throws {
        guard let poll = avahi_threaded_poll_new() else { throw AvahiError(code: Int32(AVAHI_ERR_NO_MEMORY), context: "threaded poll") }
        self.poll = poll
        self.logger = logger
    }

    /// Creates the client and starts the poll thread.
    func start() throws {
        try withLock { try makeClient() }
        guard avahi_threaded_poll_start(poll) == 0 else { throw AvahiError(code: Int32(AVAHI_ERR_FAILURE), context: "start poll thread") }
    }

    /// Stops the poll thread and frees the client (withdrawing whatever it published). Not from a callback.
    func stop() {
        avahi_threaded_poll_stop(poll)
        if let client { avahi_client_free(client) }
        client = nil
        avahi_threaded_poll_free(poll)
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    private func makeClient() throws {
        var error: Int32 = 0
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        let made = avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in
                guard let client, let userdata else { return }
                Unmanaged<AvahiClientLoop>.fromOpaque(userdata).takeUnretainedValue().stateChanged(client, state)
            }, userdata, &error)
        guard let made else { throw AvahiError(code: error, context: "client") }
        client = made
    }

    private func stateChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        if state == AVAHI_CLIENT_FAILURE, avahi_client_errno(client) == Int32(AVAHI_ERR_DISCONNECTED) {
            logger.warning("avahi-daemon went away; advertising resumes when it is back")
            onLost()
            avahi_client_free(client)
            self.client = nil
            do { try makeClient() } catch { logger.error("cannot recreate the Avahi client: \(error)") }
            return
        }
        onState(client, state)
    }
}

public struct AvahiError: Error, CustomStringConvertible {
    public let code: Int32
    public let context: String
    public var description: String { "\(context): \(String(cString: avahi_strerror(code)))" }
}
