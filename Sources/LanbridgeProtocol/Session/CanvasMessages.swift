import LanbridgeCrypto

// The agent's canvas through the bridge (PROTOCOL.md §9.7).

/// Where a paired node loads the agent's canvas and A2UI pages: the bridge's canvas relay, in
/// `welcome`, `pair.resolved` (approved) and `canvas.grant`. Sent only inside the Noise session,
/// so the certificate's fingerprint needs no other trust: pin it.
public struct CanvasAccess: Codable, Sendable, Equatable {
    /// `https://HOST:PORT/__openclaw__/cap/CAPABILITY`, without a trailing slash; append
    /// `/__openclaw__/a2ui/` or `/__openclaw__/canvas/`. Secret while it lasts: never logged.
    public var url: String
    /// SHA-256 of the relay's certificate (DER), lowercase hex.
    public var tlsSha256: String
    /// When the capability lapses if unused (Unix ms); each use extends it.
    public var expiresAtMs: Int64

    public init(url: String, tlsSha256: String, expiresAtMs: Int64) {
        (self.url, self.tlsSha256, self.expiresAtMs) = (url, tlsSha256, expiresAtMs)
    }
}

/// node → bridge: extend (or get again) this session's canvas capability. Answered `canvas.grant`
/// of the same `id`.
public struct CanvasRefresh: SessionMessage {
    public static let type = "canvas.refresh"
    public var id: String
    public init(id: String) { self.id = id }
}

/// bridge → node: the answer to `canvas.refresh`: the canvas, or why there is none
/// (`UNAVAILABLE` when no canvas host is configured).
public struct CanvasGrant: SessionMessage {
    public static let type = "canvas.grant"
    public var id: String
    public var canvas: CanvasAccess?
    public var error: ErrorMessage?
    public init(id: String, canvas: CanvasAccess?, error: ErrorMessage? = nil) { (self.id, self.canvas, self.error) = (id, canvas, error) }
}

extension CanvasAccess {
    /// Whether a server certificate (DER) is the one the bridge named: compare in a TLS
    /// delegate (`URLSession`'s or `WKWebView`'s server-trust challenge) and accept only then.
    /// The pin arrived inside the Noise session, so nothing else needs trusting.
    public func pins(certificateDER: [UInt8]) -> Bool {
        let expected = Array(tlsSha256.utf8)
        let actual = Array(Hex.encode(SHA256.hash(certificateDER)).utf8)
        guard expected.count == actual.count else { return false }
        var difference: UInt8 = 0
        for i in expected.indices { difference |= expected[i] ^ actual[i] }
        return difference == 0
    }
}
