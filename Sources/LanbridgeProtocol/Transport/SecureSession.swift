import LanbridgeCrypto

/// One end of a lanbridge connection, sans I/O: feed it received bytes, send what it returns.
///
///     initiator (node)                      responder (bridge)
///     preamble            ──────────────▶   picks pattern, PSK, version
///     XX msg 1: e         ──────────────▶
///                         ◀──────────────   XX msg 2: e, ee, s, es   payload: [version]
///     XX msg 3: s, se     ──────────────▶   (psk too, for an invite)
///     transport frames    ◀─────────────▶   transport frames
///
/// Any error leaves the session `failed`; the owner logs the error and closes the connection.
public struct SecureSession: Sendable {
    public enum Output: Sendable, Equatable {
        /// Bytes to write to the peer.
        case send([UInt8])
        case established(HandshakeResult)
        case message([UInt8])
    }

    public struct HandshakeResult: Sendable, Equatable {
        public let remoteStaticKey: [UInt8]
        public let handshakeHash: [UInt8]
        public let version: UInt8
        public let handshake: Preamble.Handshake
        public var remoteFingerprint: Fingerprint { Fingerprint(publicKey: remoteStaticKey) }

        public init(remoteStaticKey: [UInt8], handshakeHash: [UInt8], version: UInt8, handshake: Preamble.Handshake) {
            (self.remoteStaticKey, self.handshakeHash, self.version, self.handshake) = (remoteStaticKey, handshakeHash, version, handshake)
        }
    }

    /// A one-time invite, as the node holds it. The 128-bit secret S never travels in the clear:
    /// the PSK is a hash of it, and only the ID (another hash) is in the preamble. The bridge keeps
    /// just the PSK, and asks for S itself inside the encrypted session.
    public struct Invite: Sendable {
        public static let secretLength = 16
        public let secret: SecureBytes
        public let id: [UInt8]
        public let psk: SecureBytes

        public init(secret: SecureBytes) {
            self.init(secret: secret, id: Self.id(forSecret: secret), psk: Self.psk(forSecret: secret))
        }

        /// Tests use this to pair an ID with the wrong PSK.
        init(secret: SecureBytes, id: [UInt8], psk: SecureBytes) {
            (self.secret, self.id, self.psk) = (secret, id, psk)
        }

        /// ID = SHA-256("lanbridge-invite-id-v1" || S)[0..<16]
        public static func id(forSecret secret: SecureBytes) -> [UInt8] {
            Array(SHA256.hash(Array("lanbridge-invite-id-v1".utf8), secret).prefix(Preamble.inviteIDLength))
        }

        /// PSK = SHA-256("lanbridge-invite-psk-v1" || S)
        public static func psk(forSecret secret: SecureBytes) -> SecureBytes {
            SecureBytes(copying: SHA256.hash(Array("lanbridge-invite-psk-v1".utf8), secret))
        }
    }

    /// Looks up the PSK of a live invite by its ID (bridge side); nil refuses the connection.
    public typealias InviteLookup = @Sendable (_ inviteID: [UInt8]) -> SecureBytes?

    private enum State: Sendable {
        case awaitingPreamble
        case handshaking(HandshakeState, Preamble)
        case established(TransportCiphers, MessageAssembler, HandshakeResult)
        case failed
    }

    public let role: HandshakeState.Role
    private let staticKey: X25519.KeyPair
    private let versions: VersionRange
    private let limits: TransportLimits
    private let inviteLookup: InviteLookup?
    private var state: State
    private var frames = FrameDecoder(limit: TransportLimits.preAuthorization)
    /// Only the published transcript vectors set this.
    var fixedEphemeral: X25519.KeyPair?
    /// Until the owner authorises the peer (it is paired), messages stay under the pre-authorisation limit.
    public private(set) var isAuthorized = false

    /// A bridge-side session, waiting for the node's preamble.
    public init(
        responderWith staticKey: X25519.KeyPair, versions: VersionRange = .supported,
        limits: TransportLimits = .init(), inviteLookup: InviteLookup? = nil
    ) {
        role = .responder
        self.staticKey = staticKey
        self.versions = versions
        self.limits = limits
        self.inviteLookup = inviteLookup
        state = .awaitingPreamble
    }

    /// A node-side session and the bytes that open the connection (preamble and message 1).
    public static func initiate(
        with staticKey: X25519.KeyPair, versions: VersionRange = .supported,
        limits: TransportLimits = .init(), invite: Invite? = nil
    ) throws -> (SecureSession, [UInt8]) {
        try initiate(with: staticKey, versions: versions, limits: limits, invite: invite, fixedEphemeral: nil)
    }

    static func initiate(
        with staticKey: X25519.KeyPair, versions: VersionRange, limits: TransportLimits,
        invite: Invite?, fixedEphemeral: X25519.KeyPair?
    ) throws -> (SecureSession, [UInt8]) {
        let preamble = Preamble(versions: versions, handshake: invite.map { .invite(id: $0.id) } ?? .xx)
        var handshake = try HandshakeState(
            protocolName: preamble.handshake.protocolName, role: .initiator, prologue: preamble.prologue,
            staticKey: staticKey, remoteStaticKey: nil, psks: invite.map { [$0.psk] } ?? [], fixedEphemeral: fixedEphemeral)
        let message1 = try handshake.writeMessage()
        let session = SecureSession(
            initiator: staticKey, versions: versions, limits: limits,
            state: .handshaking(handshake, preamble))
        return (session, FrameDecoder.frame(preamble.bytes) + FrameDecoder.frame(message1))
    }

    private init(initiator staticKey: X25519.KeyPair, versions: VersionRange, limits: TransportLimits, state: State) {
        role = .initiator
        self.staticKey = staticKey
        self.versions = versions
        self.limits = limits
        inviteLookup = nil
        self.state = state
    }

    public var isEstablished: Bool {
        if case .established = state { true } else { false }
    }

    /// The largest application message either direction may carry right now.
    public var messageLimit: Int { isAuthorized ? limits.maxMessageSize : TransportLimits.preAuthorization }

    /// Lifts the pre-authorisation limits once the owner trusts the peer (paired node, pinned bridge).
    public mutating func authorize() {
        isAuthorized = true
        updateLimits()
    }

    public mutating func receive(_ bytes: [UInt8]) throws -> [Output] {
        try receive { $0.append(bytes) }
    }

    /// The same, from bytes the caller lends (a channel's read buffer): copied once, into the
    /// frame buffer, where each transport frame is then decrypted.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws -> [Output] {
        try receive { $0.append(contentsOf: bytes) }
    }

    private mutating func receive(_ append: (inout FrameDecoder) -> Void) throws -> [Output] {
        if case .failed = state { throw TransportError.closed }
        do {
            append(&frames)
            var outputs: [Output] = []
            while !isEstablished, var frame = try frames.next() {
                outputs += try handle(&frame)
            }
            if isEstablished {
                // Out of `self` while frames are opened in it, so both can change (and its buffer stays unique).
                var decoder = frames
                frames = FrameDecoder(limit: 0)
                defer { frames = decoder }
                while let opened = try decoder.nextInPlace({ buffer, range in try open(&buffer, range) }) {
                    if let message = opened { outputs.append(.message(message)) }
                }
            }
            return outputs
        } catch {
            state = .failed
            throw error
        }
    }

    /// One transport frame, decrypted where it lies in the frame buffer; the message once its
    /// last chunk is in.
    private mutating func open(_ buffer: inout [UInt8], _ range: Range<Int>) throws -> [UInt8]? {
        guard case .established(var ciphers, var assembler, let result) = state else { throw TransportError.closed }
        // Take the payload out of `state` so the partial message is uniquely owned and appends
        // do not copy it; an error leaves the session failed, as it should.
        state = .failed
        guard range.count >= Noise.tagLength + 1 else { throw TransportError.frameTooShort(length: range.count) }
        do { try ciphers.receive.decryptInPlace(&buffer, range: range) } catch {
            throw TransportError.decryptionFailed
        }
        let message = try assembler.add(chunk: buffer[range.lowerBound..<range.upperBound - Noise.tagLength])
        state = .established(ciphers, assembler, result)
        return message
    }

    /// The peer closed its side. Throws the reason if that cut something short.
    public mutating func receiveEOF() throws {
        if case .failed = state { throw TransportError.closed }
        defer { state = .failed }
        try frames.finish()
        if !isEstablished { throw TransportError.peerClosedDuringHandshake }
    }

    /// Encrypts one application message into wire bytes (one or more frames).
    public mutating func seal(_ message: [UInt8]) throws -> [UInt8] {
        Array(try sealFrames(message).joined())
    }

    /// Encrypts one application message into its frames, each at most 64 KiB, so a large message
    /// can be written out frame by frame instead of as one buffer.
    public mutating func sealFrames(_ message: [UInt8]) throws -> [[UInt8]] {
        guard case .established(var ciphers, let assembler, let result) = state else { throw TransportError.notEstablished }
        guard message.count <= messageLimit else { throw TransportError.messageTooLarge(size: message.count, limit: messageLimit) }
        // Each chunk is built in its frame buffer and encrypted there: one copy of the message.
        var frames: [[UInt8]] = []
        for (range, isFinal) in Chunking.ranges(forMessageOf: message.count) {
            var frame: [UInt8] = []
            frame.reserveCapacity(FrameDecoder.headerLength + 1 + range.count + Noise.tagLength)
            frame += [0, 0, isFinal ? Chunking.final : Chunking.more]
            frame += message[range]
            try ciphers.send.encryptInPlace(&frame, from: FrameDecoder.headerLength)
            let length = frame.count - FrameDecoder.headerLength
            frame[0] = UInt8(length >> 8)
            frame[1] = UInt8(length & 0xFF)
            frames.append(frame)
        }
        state = .established(ciphers, assembler, result)
        return frames
    }

    // MARK: - State transitions

    /// `frame` is ours to overwrite: transport frames are decrypted in place.
    private mutating func handle(_ frame: inout [UInt8]) throws -> [Output] {
        switch state {
        case .awaitingPreamble:
            try acceptPreamble(frame)
            return []
        case .handshaking(var handshake, let preamble):
            do {
                let payload = try handshake.readMessage(frame)
                return try role == .responder
                    ? respond(to: payload, handshake: handshake, preamble: preamble)
                    : finishAsInitiator(payload, handshake: handshake, preamble: preamble)
            } catch let error as NoiseError {
                throw TransportError.handshakeFailed(error)
            }
        case .established:
            return try open(&frame, frame.indices).map { [.message($0)] } ?? []
        case .failed:
            throw TransportError.closed
        }
    }

    private mutating func acceptPreamble(_ frame: [UInt8]) throws {
        let preamble = try Preamble(parsing: frame)
        guard versions.highestCommon(with: preamble.versions) != nil else {
            throw TransportError.noCommonVersion(offered: preamble.versions, supported: versions)
        }
        var psks: [SecureBytes] = []
        if case let .invite(id) = preamble.handshake {
            guard let psk = inviteLookup?(id) else { throw TransportError.unknownInvite }
            psks = [psk]
        }
        let handshake = try HandshakeState(
            protocolName: preamble.handshake.protocolName, role: .responder, prologue: preamble.prologue,
            staticKey: staticKey, remoteStaticKey: nil, psks: psks, fixedEphemeral: fixedEphemeral)
        state = .handshaking(handshake, preamble)
    }

    private mutating func respond(to payload: [UInt8], handshake: HandshakeState, preamble: Preamble) throws -> [Output] {
        var handshake = handshake
        guard payload.isEmpty else { throw TransportError.unexpectedHandshakePayload("message \(handshake.isComplete ? 3 : 1) must be empty") }
        // acceptPreamble already refused ranges with nothing in common.
        let version = versions.highestCommon(with: preamble.versions)!
        if handshake.isComplete {
            return [.established(try establish(handshake, preamble: preamble, version: version))]
        }
        let message2 = try handshake.writeMessage(payload: [version])
        state = .handshaking(handshake, preamble)
        return [.send(FrameDecoder.frame(message2))]
    }

    private mutating func finishAsInitiator(_ payload: [UInt8], handshake: HandshakeState, preamble: Preamble) throws -> [Output] {
        var handshake = handshake
        guard payload.count == 1, versions.contains(payload[0]) else {
            throw TransportError.unexpectedHandshakePayload("message 2 must carry one version byte within \(versions)")
        }
        let message3 = try handshake.writeMessage()
        let result = try establish(handshake, preamble: preamble, version: payload[0])
        return [.send(FrameDecoder.frame(message3)), .established(result)]
    }

    private mutating func establish(_ handshake: HandshakeState, preamble: Preamble, version: UInt8) throws -> HandshakeResult {
        let result = HandshakeResult(
            remoteStaticKey: handshake.remoteStaticKey!, handshakeHash: handshake.handshakeHash,
            version: version, handshake: preamble.handshake)
        state = .established(try handshake.split(), MessageAssembler(limit: messageLimit), result)
        updateLimits()
        return result
    }

    private mutating func updateLimits() {
        // Unauthorised peers cannot even make us buffer a full-size frame.
        frames.limit =
            isEstablished && isAuthorized
            ? Noise.maxMessageLength
            : min(Noise.maxMessageLength, TransportLimits.preAuthorization + Noise.tagLength + 1)
        if case .established(let ciphers, var assembler, let result) = state {
            assembler.limit = messageLimit
            state = .established(ciphers, assembler, result)
        }
    }
}
