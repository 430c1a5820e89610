/// The cleartext first frame of every connection, sent by the initiator (the node).
///
///     "LNBR" | min version (1) | max version (1) | handshake (1) [| invite ID (16), for handshake 2]
///
/// The responder needs it before the first Noise message: it names the pattern (and, for an invite,
/// which PSK). Both sides bind it into the Noise prologue, so an attacker who edits the offered
/// version range, pattern or invite ID on the wire breaks the handshake instead of downgrading it.
public struct Preamble: Sendable, Equatable {
    public enum Handshake: Sendable, Equatable {
        /// `Noise_XX_25519_ChaChaPoly_SHA256`: pairing by code, and every paired reconnect.
        case xx
        /// `Noise_XXpsk3_25519_ChaChaPoly_SHA256`, keyed by a one-time invite's secret.
        case invite(id: [UInt8])

        public var protocolName: NoiseProtocolName {
            switch self {
            case .xx: .xx
            case .invite: .xxPSK3
            }
        }
    }

    public static let magic = Array("LNBR".utf8)
    public static let inviteIDLength = 16

    public let versions: VersionRange
    public let handshake: Handshake

    public init(versions: VersionRange, handshake: Handshake) {
        self.versions = versions
        self.handshake = handshake
    }

    public var bytes: [UInt8] {
        switch handshake {
        case .xx: Self.magic + [versions.min, versions.max, 1]
        case let .invite(id): Self.magic + [versions.min, versions.max, 2] + id
        }
    }

    public init(parsing bytes: [UInt8]) throws {
        guard bytes.count >= 7, Array(bytes.prefix(4)) == Self.magic else {
            throw TransportError.badPreamble("not a lanbridge client (no LNBR magic)")
        }
        guard let versions = VersionRange(min: bytes[4], max: bytes[5]) else {
            throw TransportError.badPreamble("invalid version range \(bytes[4])-\(bytes[5])")
        }
        switch (bytes[6], bytes.count) {
        case (1, 7):
            handshake = .xx
        case (2, 7 + Self.inviteIDLength):
            handshake = .invite(id: Array(bytes.suffix(Self.inviteIDLength)))
        default:
            throw TransportError.badPreamble("unknown handshake \(bytes[6]) with \(bytes.count) bytes")
        }
        self.versions = versions
    }

    /// prologue = "lanbridge-prologue-v1" || 0x00 || protocol name || 0x00 || preamble bytes
    public var prologue: [UInt8] {
        Array("lanbridge-prologue-v1".utf8) + [0] + Array(handshake.protocolName.description.utf8) + [0] + bytes
    }
}
