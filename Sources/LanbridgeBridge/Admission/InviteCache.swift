import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores
import NIOConcurrencyHelpers

/// The PSKs of live invites, copied out of invites.json whenever it changes, so the handshake can
/// look one up without file I/O or the store lock.
final class InviteCache: Sendable {
    /// Expiry on the monotonic clock: a step of the wall clock after the read changes nothing.
    private struct Loaded {
        var entries: [[UInt8]: (psk: [UInt8], expiresAt: Moment)] = [:]
        var version = ""
    }
    private let loaded = NIOLockedValueBox(Loaded())
    private let store: PairingStore

    init(store: PairingStore) { self.store = store }

    /// The file's version is left unknown: the state may be older than the file is now, so the
    /// next miss reads it again.
    func replace(with state: PairingState) {
        replace(with: state.invites, version: "")
    }

    private func replace(with file: InvitesFile, version: String) {
        var fresh: [[UInt8]: (psk: [UInt8], expiresAt: Moment)] = [:]
        let (wall, now) = (Date(), Moment.now)
        // Used invites too: their key may come back (PairingState.pair), and the store decides.
        for invite in file.invites where invite.openClaw != true {
            if let id = try? Hex.decode(invite.id), let psk = try? Hex.decode(invite.psk) {
                fresh[id] = (psk, now + invite.expiresAt.timeIntervalSince(wall))
            }
        }
        loaded.withLockedValue { $0 = Loaded(entries: fresh, version: version) }
    }

    /// On a miss, an invite created a moment ago may not have reached the cache through inotify
    /// yet: if invites.json changed since it was loaded (one `stat`), read it again, unlocked.
    func psk(for id: [UInt8]) -> SecureBytes? {
        if let hit = lookup(id) { return hit }
        let version = store.invitesFileVersion()
        guard version != loaded.withLockedValue({ $0.version }), let file = try? store.readInvitesWithoutLock() else { return nil }
        replace(with: file, version: version)
        return lookup(id)
    }

    private func lookup(_ id: [UInt8]) -> SecureBytes? {
        loaded.withLockedValue { loaded in
            guard let entry = loaded.entries[id], entry.expiresAt > Moment.now else { return nil }
            return SecureBytes(copying: entry.psk)
        }
    }
}
