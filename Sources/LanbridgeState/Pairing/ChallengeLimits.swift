import FoundationEssentials
import LanbridgeProtocol

/// How often code challenges may be had, across requests: per node key and per source address in
/// an hour. `PairingState` bounds one request's challenges; these bound how fast a peer can make
/// new requests to challenge (PROTOCOL.md §8.3). Kept by the daemon in memory, in bounded tables.
public struct ChallengeLimits: Sendable {
    public static let window: TimeInterval = 3600
    public static let perKey = 6
    public static let perAddress = 10

    private var byKey = WindowCounter<PublicKey>(window: Self.window)
    private var byAddress = WindowCounter<String>(window: Self.window)

    public init() {}

    /// Counts a challenge, or says why it is refused (and then counts nothing).
    public mutating func admit(key: PublicKey, address: String, now: Moment) -> String? {
        if byKey.count(key, now: now) >= Self.perKey {
            return "this device asked for \(Self.perKey) code challenges in the last hour; wait, or pair by invite"
        }
        if byAddress.count(address, now: now) >= Self.perAddress {
            return "\(address) asked for \(Self.perAddress) code challenges in the last hour; wait, or pair by invite"
        }
        byKey.record(key, now: now)
        byAddress.record(address, now: now)
        return nil
    }
}
