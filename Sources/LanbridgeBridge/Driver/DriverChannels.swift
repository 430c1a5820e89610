import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import LanbridgeTransport
import NIOCore

/// The driver's channels, confined to its loop: the nodes' (by connection ID, with the admission
/// slot and descriptor ticket of those still in their handshake) and the gateway link's, and the
/// writes to them, flushed once per turn of the loop (DriverChannelsTests).
final class DriverChannels {
    private let loop: any EventLoop
    let admission: Admission
    /// One descriptor budget for every listener (nil in tests that build a driver alone).
    let descriptors: DescriptorGate?
    private var channels: [ConnectionID: any Channel] = [:]
    private var handshaking: [ConnectionID: Admission.Slot] = [:]
    /// Node connections' places in the descriptor budget, by their admission slot, until proved or gone.
    private var tickets: [Admission.Slot: DescriptorGate.Ticket] = [:]
    private var nextConnection = 0
    /// The connections of OpenClaw's apps (on the app door's own thread): told the core's messages
    /// as they are, not encoded for a Noise session.
    private var apps: Set<ConnectionID> = []
    /// The connections of browsers at the browser door, and through which tier (a Noise session
    /// like any node's, but its pairing is labelled by the door).
    private var browsers: [ConnectionID: BrowserTier] = [:]
    /// The gateway link now up, if any, and how many have come up (the generation of the next).
    private(set) var link: GatewayLinkHandler?
    private(set) var linkGeneration = 0
    private(set) var linksEstablished = 0
    /// Channels written to since the last flush.
    private var unflushed: Set<ConnectionID> = []
    private var linkUnflushed = false
    private var flushScheduled = false

    init(loop: any EventLoop, admission: Admission, descriptors: DescriptorGate?) {
        (self.loop, self.admission, self.descriptors) = (loop, admission, descriptors)
    }

    // MARK: - Nodes

    /// A new channel, before its handshake: its connection ID.
    func accepted(_ channel: any Channel, slot: Admission.Slot, ticket: DescriptorGate.Ticket?, app: Bool = false, browser: BrowserTier? = nil) -> ConnectionID {
        loop.preconditionInEventLoop()
        nextConnection += 1
        channels[nextConnection] = channel
        handshaking[nextConnection] = slot
        if let ticket { tickets[slot] = ticket }
        if app { apps.insert(nextConnection) }
        if let browser { browsers[nextConnection] = browser }
        return nextConnection
    }

    /// Whether `id` is an OpenClaw app's connection.
    func isApp(_ id: ConnectionID) -> Bool { apps.contains(id) }

    /// The browser door's tier `id` came through, if it did.
    func browser(_ id: ConnectionID) -> BrowserTier? { browsers[id] }

    /// The handshake is done: its admission slot, which the core now holds.
    func established(_ id: ConnectionID) -> Admission.Slot? { handshaking.removeValue(forKey: id) }

    /// Whether the channel is still open; if not, its slot is given back (it closed during a read
    /// of the store that its opening waited for). The local address, when open.
    func stillOpen(_ id: ConnectionID, slot: Admission.Slot?) -> (open: Bool, local: String?) {
        guard let channel = channels[id] else {
            if let slot { admission.release(slot) }
            return (false, nil)
        }
        return (true, channel.localAddress?.ipAddress)
    }

    func closed(_ id: ConnectionID) {
        channels[id] = nil
        apps.remove(id)
        browsers[id] = nil
        if let slot = handshaking.removeValue(forKey: id) {
            admission.release(slot)
            tickets[slot] = nil
        }
    }

    /// The core released the slot (paired, or gone) or let it wait for the operator: either way it
    /// is no longer evictable from the descriptor budget.
    func slotReleased(_ slot: Admission.Slot, waiting: Bool) {
        if waiting { admission.waiting(slot) } else { admission.release(slot) }
        descriptors?.prove(tickets.removeValue(forKey: slot))
    }

    /// Writes to the channel (any channel's loop: NIO hops), flushed with the rest.
    func send(_ message: some Sendable, to id: ConnectionID) {
        guard let channel = channels[id] else { return }
        channel.write(message, promise: nil)
        unflushed.insert(id)
        flushSoon()
    }

    func event(_ event: Any, to id: ConnectionID) {
        channels[id]?.triggerUserOutboundEvent(event, promise: nil)
    }

    /// What was written for it goes out before the close (an error saying why).
    func close(_ id: ConnectionID) {
        if unflushed.remove(id) != nil { channels[id]?.flush() }
        channels[id]?.close(promise: nil)
    }

    // MARK: - The gateway link

    func nextLinkGeneration() -> Int {
        loop.preconditionInEventLoop()
        linkGeneration += 1
        return linkGeneration
    }

    func linkUp(_ handler: GatewayLinkHandler) {
        link = handler
        linksEstablished += 1
    }

    func linkDown(_ generation: Int) {
        if link?.generation == generation { link = nil }
    }

    /// Writes to the link of `generation`, if it is still the one up; flushed with the rest.
    func toLink(_ generation: Int, _ write: (GatewayLinkHandler) -> Void) {
        guard let link, link.generation == generation else { return }
        write(link)
        linkUnflushed = true
        flushSoon()
    }

    /// Writes are flushed once per turn of the loop, after every event it found ready has been
    /// carried out (the tasks the loop runs next): a burst of invokes or results read at once
    /// leaves in one system call per channel, not one each.
    private func flushSoon() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.execute { [self] in
            flushScheduled = false
            for id in unflushed { channels[id]?.flush() }
            unflushed.removeAll(keepingCapacity: true)
            if linkUnflushed {
                linkUnflushed = false
                link?.flush()
            }
        }
    }
}
