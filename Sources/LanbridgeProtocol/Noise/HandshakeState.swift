import LanbridgeCrypto

/// HandshakeState (spec §5.3): runs any pattern from `HandshakePattern` token by token.
/// Pure: bytes in, bytes out. Fresh ephemeral keys come from libsodium's CSPRNG.
public struct HandshakeState: Sendable {
    public enum Role: Sendable { case initiator, responder }

    public let role: Role
    public let pattern: HandshakePattern
    private var symmetric: SymmetricState
    private let s: X25519.KeyPair?
    private var e: X25519.KeyPair?
    private var rs: [UInt8]?
    private var re: [UInt8]?
    private var psks: [SecureBytes]
    private var messageIndex = 0
    /// Only the test vectors set this; production ephemerals are always fresh.
    private var fixedEphemeral: X25519.KeyPair?

    public init(
        protocolName: NoiseProtocolName, role: Role, prologue: [UInt8],
        staticKey: X25519.KeyPair?, remoteStaticKey: [UInt8]? = nil, psks: [SecureBytes] = []
    ) throws {
        try self.init(
            protocolName: protocolName, role: role, prologue: prologue, staticKey: staticKey,
            remoteStaticKey: remoteStaticKey, psks: psks, fixedEphemeral: nil)
    }

    init(
        protocolName: NoiseProtocolName, role: Role, prologue: [UInt8],
        staticKey: X25519.KeyPair?, remoteStaticKey: [UInt8]?, psks: [SecureBytes], fixedEphemeral: X25519.KeyPair?
    ) throws {
        self.role = role
        self.pattern = protocolName.pattern
        self.s = staticKey
        self.rs = remoteStaticKey
        self.fixedEphemeral = fixedEphemeral
        guard psks.count == pattern.pskCount, psks.allSatisfy({ $0.count == Noise.pskLength }) else {
            throw NoiseError.missingKey("\(pattern.pskCount) PSK(s) of \(Noise.pskLength) bytes")
        }
        self.psks = psks
        symmetric = SymmetricState(protocolName: protocolName.description)
        symmetric.mixHash(prologue)
        // Pre-messages: only `s` appears in the supported patterns.
        for (owner, tokens) in [(Role.initiator, pattern.initiatorPreMessage), (.responder, pattern.responderPreMessage)] {
            for _ in tokens {
                let key = owner == role ? s?.publicKey : rs
                guard let key else { throw NoiseError.missingKey(owner == role ? "local static" : "remote static") }
                symmetric.mixHash(key)
            }
        }
    }

    public var isComplete: Bool { messageIndex == pattern.messages.count }

    /// Whether the next handshake message is ours to write.
    public var isOurTurn: Bool {
        !isComplete && (messageIndex % 2 == 0) == (role == .initiator)
    }

    /// `h`: binds the whole transcript. Used for channel binding (the pairing code).
    public var handshakeHash: [UInt8] { symmetric.h }

    public var remoteStaticKey: [UInt8]? { rs }

    public mutating func writeMessage(payload: [UInt8] = []) throws -> [UInt8] {
        guard !isComplete else { throw NoiseError.handshakeAlreadyComplete }
        guard isOurTurn else { throw NoiseError.notYourTurn }
        var next = self
        var message: [UInt8] = []
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let ephemeral = next.fixedEphemeral ?? .generate()
                next.fixedEphemeral = nil
                next.e = ephemeral
                message += ephemeral.publicKey
                next.symmetric.mixHash(ephemeral.publicKey)
                if pattern.usesPSK { next.symmetric.mixKey(ephemeral.publicKey) }
            case .s:
                guard let s else { throw NoiseError.missingKey("local static") }
                message += try next.symmetric.encryptAndHash(s.publicKey)
            case .psk:
                next.symmetric.mixKeyAndHash(next.psks.removeFirst())
            case .ee, .es, .se, .ss:
                try next.mixDH(token)
            }
        }
        message += try next.symmetric.encryptAndHash(payload)
        guard message.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong(message.count) }
        next.messageIndex += 1
        self = next
        return message
    }

    /// Returns the decrypted payload. On any error `self` is left unchanged.
    public mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        guard !isComplete else { throw NoiseError.handshakeAlreadyComplete }
        guard !isOurTurn else { throw NoiseError.notYourTurn }
        guard message.count <= Noise.maxMessageLength else { throw NoiseError.messageTooLong(message.count) }
        var next = self
        var rest = message[...]
        func take(_ n: Int) throws -> [UInt8] {
            guard rest.count >= n else { throw NoiseError.messageTooShort(expected: message.count - rest.count + n, got: message.count) }
            defer { rest = rest.dropFirst(n) }
            return Array(rest.prefix(n))
        }
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let remoteEphemeral = try take(Noise.dhLength)
                next.re = remoteEphemeral
                next.symmetric.mixHash(remoteEphemeral)
                if pattern.usesPSK { next.symmetric.mixKey(remoteEphemeral) }
            case .s:
                let sealed = try take(next.symmetric.hasKey ? Noise.dhLength + Noise.tagLength : Noise.dhLength)
                next.rs = try next.symmetric.decryptAndHash(sealed)
            case .psk:
                next.symmetric.mixKeyAndHash(next.psks.removeFirst())
            case .ee, .es, .se, .ss:
                try next.mixDH(token)
            }
        }
        let payload = try next.symmetric.decryptAndHash(Array(rest))
        next.messageIndex += 1
        self = next
        return payload
    }

    /// The transport ciphers, once the last handshake message has been written or read.
    public func split() throws -> TransportCiphers {
        guard isComplete else { throw NoiseError.handshakeNotComplete }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        return role == .initiator
            ? TransportCiphers(send: initiatorToResponder, receive: responderToInitiator)
            : TransportCiphers(send: responderToInitiator, receive: initiatorToResponder)
    }

    private mutating func mixDH(_ token: NoiseToken) throws {
        // Which local key meets which remote key, per spec §5.3 (es: initiator's e with responder's s).
        let (local, remote): (X25519.KeyPair?, [UInt8]?) =
            switch (token, role) {
            case (.ee, _): (e, re)
            case (.ss, _): (s, rs)
            case (.es, .initiator), (.se, .responder): (e, rs)
            case (.es, .responder), (.se, .initiator): (s, re)
            default: (nil, nil)
            }
        guard let local, let remote else { throw NoiseError.missingKey("for \(token)") }
        do {
            symmetric.mixKey(try X25519.sharedSecret(local.privateKey, remote))
        } catch CryptoError.weakPublicKey {
            throw NoiseError.weakPublicKey
        }
    }
}

/// The pair of CipherStates that protect transport messages after the handshake.
public struct TransportCiphers: Sendable {
    public var send: CipherState
    public var receive: CipherState
}
