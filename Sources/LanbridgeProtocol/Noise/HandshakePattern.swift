/// The tokens of a handshake pattern (spec §7).
public enum NoiseToken: Sendable, Equatable {
    case e, s, ee, es, se, ss, psk
}

/// A handshake pattern: pre-messages and message token lists, with psk modifiers already applied.
public struct HandshakePattern: Sendable, Equatable {
    public let name: String
    public let initiatorPreMessage: [NoiseToken]
    public let responderPreMessage: [NoiseToken]
    /// Alternating messages, initiator first.
    public let messages: [[NoiseToken]]

    public var isOneWay: Bool { ["N", "K", "X"].contains(baseName) }
    public var usesPSK: Bool { messages.contains { $0.contains(.psk) } }
    public var pskCount: Int { messages.reduce(0) { $0 + $1.filter { $0 == .psk }.count } }
    private let baseName: String

    init(_ name: String, initiatorPre i: [NoiseToken] = [], responderPre r: [NoiseToken] = [], messages: [[NoiseToken]]) {
        self.name = name
        self.baseName = name
        self.initiatorPreMessage = i
        self.responderPreMessage = r
        self.messages = messages
    }

    private init(base: HandshakePattern, name: String, messages: [[NoiseToken]]) {
        self.name = name
        self.baseName = base.baseName
        self.initiatorPreMessage = base.initiatorPreMessage
        self.responderPreMessage = base.responderPreMessage
        self.messages = messages
    }

    /// Applies modifiers such as `psk3` or `psk0+psk2` (spec §9.2): psk0 opens the first message,
    /// pskN closes message N.
    func applying(modifiers: [String]) throws -> HandshakePattern {
        var messages = self.messages
        for modifier in modifiers {
            guard modifier.hasPrefix("psk"), let n = Int(modifier.dropFirst(3)), n <= messages.count else {
                throw NoiseError.unsupportedProtocol("modifier \(modifier)")
            }
            if n == 0 { messages[0].insert(.psk, at: 0) } else { messages[n - 1].append(.psk) }
        }
        return HandshakePattern(base: self, name: name + modifiers.joined(separator: "+"), messages: messages)
    }

    // One-way patterns (spec §7.4).
    public static let N = HandshakePattern("N", responderPre: [.s], messages: [[.e, .es]])
    public static let K = HandshakePattern("K", initiatorPre: [.s], responderPre: [.s], messages: [[.e, .es, .ss]])
    public static let X = HandshakePattern("X", responderPre: [.s], messages: [[.e, .es, .s, .ss]])

    // Interactive fundamental patterns (spec §7.5).
    public static let NN = HandshakePattern("NN", messages: [[.e], [.e, .ee]])
    public static let NK = HandshakePattern("NK", responderPre: [.s], messages: [[.e, .es], [.e, .ee]])
    public static let NX = HandshakePattern("NX", messages: [[.e], [.e, .ee, .s, .es]])
    public static let KN = HandshakePattern("KN", initiatorPre: [.s], messages: [[.e], [.e, .ee, .se]])
    public static let KK = HandshakePattern("KK", initiatorPre: [.s], responderPre: [.s], messages: [[.e, .es, .ss], [.e, .ee, .se]])
    public static let KX = HandshakePattern("KX", initiatorPre: [.s], messages: [[.e], [.e, .ee, .se, .s, .es]])
    public static let XN = HandshakePattern("XN", messages: [[.e], [.e, .ee], [.s, .se]])
    public static let XK = HandshakePattern("XK", responderPre: [.s], messages: [[.e, .es], [.e, .ee], [.s, .se]])
    /// The pattern lanbridge uses: mutual authentication, static keys hidden from passive observers.
    public static let XX = HandshakePattern("XX", messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
    public static let IN = HandshakePattern("IN", messages: [[.e, .s], [.e, .ee, .se]])
    public static let IK = HandshakePattern("IK", responderPre: [.s], messages: [[.e, .es, .s, .ss], [.e, .ee, .se]])
    public static let IX = HandshakePattern("IX", messages: [[.e, .s], [.e, .ee, .se, .s, .es]])

    static let fundamental: [String: HandshakePattern] = Dictionary(
        uniqueKeysWithValues: [N, K, X, NN, NK, NX, KN, KK, KX, XN, XK, XX, IN, IK, IX].map { ($0.name, $0) })
}

/// A parsed protocol name such as `Noise_XXpsk3_25519_ChaChaPoly_SHA256`.
/// Only the `25519_ChaChaPoly_SHA256` suite is implemented.
public struct NoiseProtocolName: Sendable, Equatable, CustomStringConvertible {
    public static let suite = "25519_ChaChaPoly_SHA256"
    public let pattern: HandshakePattern
    public let description: String

    public init(_ name: String) throws {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[0] == "Noise", parts[2...].joined(separator: "_") == Self.suite else {
            throw NoiseError.unsupportedProtocol(name)
        }
        // "XXpsk3" → base "XX", modifiers ["psk3"]; "NNpsk0+psk2" → ["psk0", "psk2"].
        let patternPart = parts[1]
        let base = String(patternPart.prefix { $0.isUppercase })
        let rest = patternPart.dropFirst(base.count)
        guard let fundamental = HandshakePattern.fundamental[base] else { throw NoiseError.unsupportedProtocol(name) }
        let modifiers = rest.isEmpty ? [] : rest.split(separator: "+").map(String.init)
        pattern = try fundamental.applying(modifiers: modifiers)
        description = name
    }

    public static let xx = try! NoiseProtocolName("Noise_XX_25519_ChaChaPoly_SHA256")
    public static let xxPSK3 = try! NoiseProtocolName("Noise_XXpsk3_25519_ChaChaPoly_SHA256")
}
