import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// The canvas relay as the core knows it: set by the driver once the relay listens.
package struct CanvasRelayInfo: Sendable, Equatable {
    package var port: Int
    package var tlsSha256: String
    /// Origins of the canvas host behind the relay, as agent URLs name it
    /// (`http://127.0.0.1:18789`): such URLs are rewritten to the node's relay URL.
    package var upstreamOrigins: [String]

    package init(port: Int, tlsSha256: String, upstreamOrigins: [String]) {
        (self.port, self.tlsSha256, self.upstreamOrigins) = (port, tlsSha256, upstreamOrigins)
    }

    /// How agent URLs may name the canvas host: its origin, and `localhost` for a loopback one.
    package static func origins(of upstream: CanvasUpstream) -> [String] {
        guard case let .tcp(host, port) = upstream else { return [] }
        let suffix = port == 80 ? "" : ":\(port)"
        var origins = ["http://\(host.contains(":") ? "[\(host)]" : host)\(suffix)"]
        if host == "127.0.0.1" || host == "::1" { origins.append("http://localhost\(suffix)") }
        return origins
    }
}

/// The relay's answer for one request's capability.
package struct CanvasUse: Sendable, Equatable {
    package var lookup: CanvasGrants.Lookup
    /// The gateway's capability for the node (OpenClaw's canvas host), to put in the upstream path.
    package var upstream: String?
    /// Origins the node's pages may reach beyond the defaults (`CanvasContentPolicy`).
    package var origins: [OriginPattern] = []
}

extension BridgeCore {
    /// A new certificate for both doors: status shows it, and every connected node hears its new
    /// pin (an unsolicited `canvas.grant`, id ""), its capability unchanged.
    mutating func canvasCertificateRotated(_ sha256: String, wall: Date) {
        if runtime.openClawAppsTlsSha256 != nil {
            runtime.openClawAppsTlsSha256 = sha256
            runtimeChanged = true
        }
        guard var relay = canvasRelay else { return }
        relay.tlsSha256 = sha256
        canvasRelay = relay
        runtime.canvas?.tlsSha256 = sha256
        runtimeChanged = true
        for (node, id) in sessions.sorted(by: { $0.value < $1.value }) {
            guard let connection = connections[id], let host = connection.local, let capability = canvasGrants.capability(of: node) else { continue }
            let expires = canvasGrants.expiry(of: node).map { Int64(($0.timeIntervalSince(now) + wall.timeIntervalSince1970) * 1000) } ?? 0
            send(
                CanvasGrant(
                    id: "",
                    canvas: CanvasAccess(
                        url: Self.relayURL(host: host, port: relay.port, capability: capability), tlsSha256: sha256,
                        expiresAtMs: expires)), to: id)
        }
    }

    mutating func setOpenClawApps(_ urls: [String], tlsSha256: String?) {
        runtime.openClawApps = urls
        runtime.openClawAppsTlsSha256 = tlsSha256
        runtimeChanged = true
    }

    mutating func setCanvas(_ info: CanvasRelayInfo, status: RuntimeStatus.Canvas) {
        canvasRelay = info
        runtime.canvas = status
        runtimeChanged = true
    }
}

/// The agent's canvas (issue 37): a capability per node session, in `welcome`, refreshed on
/// request, looked up by the relay, and gone with the session.
extension BridgeCore {
    package var canvasTTL: Double { Double(settings.canvas.capabilityTTLMs) / 1000 }

    /// A fresh capability for the node's new session, and what to tell it; nil without a relay.
    mutating func canvasGranted(to connection: Connection) -> CanvasAccess? {
        guard let relay = canvasRelay, let host = connection.local else { return nil }
        let capability = CanvasGrants.mint(random(CanvasGrants.randomBytes))
        canvasGrants.grant(capability, node: connection.nodeId, expires: now.addingTimeInterval(canvasTTL))
        // Wall time of the connection: the node learns a lapse no later than the real one.
        return access(capability, host: host, relay: relay, from: connection.connectedAt)
    }

    /// `canvas.refresh`: the session's capability, extended (minted again if it had lapsed).
    mutating func canvasRefreshed(_ refresh: CanvasRefresh, for connection: Connection, wall: Date) -> CanvasGrant {
        guard let relay = canvasRelay, let host = connection.local else {
            return CanvasGrant(id: refresh.id, canvas: nil, error: ErrorMessage(code: ErrorMessage.unavailable, message: "this bridge has no canvas host"))
        }
        let capability = canvasGrants.capability(of: connection.nodeId) ?? CanvasGrants.mint(random(CanvasGrants.randomBytes))
        canvasGrants.grant(capability, node: connection.nodeId, expires: now.addingTimeInterval(canvasTTL))
        // Behind OpenClaw's canvas host the node's refresh is worth nothing unless the gateway's is fresh too.
        if gateway.openClaw { actions.append(.refreshUpstreamCanvas(connection.nodeId)) }
        return CanvasGrant(id: refresh.id, canvas: access(capability, host: host, relay: relay, from: wall))
    }

    /// What the node is told: its relay URL, the pin, and when the capability lapses unused.
    func access(_ capability: String, host: String, relay: CanvasRelayInfo, from wall: Date) -> CanvasAccess {
        CanvasAccess(
            url: Self.relayURL(host: host, port: relay.port, capability: capability), tlsSha256: relay.tlsSha256,
            expiresAtMs: Int64((wall.timeIntervalSince1970 + canvasTTL) * 1000))
    }

    /// The node's last session ended: its capability dies now, and so do its relay connections.
    mutating func canvasSessionEnded(_ node: Fingerprint) {
        guard canvasGrants.capability(of: node) != nil else { return }
        canvasGrants.revoke(node)
        actions.append(.canvasRevoked(node))
    }

    /// The relay asks: whose capability is this, what does it open upstream, and which origins
    /// beyond the defaults may its pages reach (the config's and the node's own allow rules).
    mutating func canvasUse(_ capability: String) -> CanvasUse {
        let lookup = canvasGrants.use(capability, now: now, ttl: canvasTTL, limits: settings.limits)
        guard case let .granted(node) = lookup else { return CanvasUse(lookup: lookup) }
        // Belt and braces: a grant is only as good as the paired session it was made for.
        guard sessions[node] != nil, let pairedNode = paired[node] else {
            canvasSessionEnded(node)
            return CanvasUse(lookup: .unknown)
        }
        return CanvasUse(
            lookup: lookup, upstream: canvasGrants.upstream[node]?.capability,
            origins: settings.canvas.allowOrigins + CompiledRules(pairedNode.access).origins.allow)
    }

    /// `https://host:port/__openclaw__/cap/<capability>`: the shape OpenClaw's apps expect of
    /// `canvasHostUrl`, so they append `/__openclaw__/a2ui/` to it as they would upstream.
    package static func relayURL(host: String, port: Int, capability: String) -> String {
        "https://\(host.contains(":") ? "[\(host)]" : host):\(port)\(CanvasRequest.capabilityPrefix)\(capability)"
    }

    /// The node's relay origin (`https://host:port`), for the URL policy; nil without a grant.
    func canvasRelayBase(for connection: Connection?) -> String? {
        guard let relay = canvasRelay, let connection, let host = connection.local,
            let capability = canvasGrants.capability(of: connection.nodeId)
        else { return nil }
        return Self.relayURL(host: host, port: relay.port, capability: capability)
    }
}
