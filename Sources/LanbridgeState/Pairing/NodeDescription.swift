import FoundationEssentials
import LanbridgeProtocol

/// One paired node as `node.list`, `node.describe` and `lanbridge nodes describe` show it: what it
/// claims, what the operator allows, and what it may therefore run (PROTOCOL.md §12.2).
public struct NodeDescription: Codable, Equatable, Sendable {
    public var nodeId: String
    public var displayName: String
    public var platform: String
    public var osVersion: String?
    public var appVersion: String?
    public var deviceModel: String?
    /// A browser node's key: `extractable` where its browser has no WebCrypto X25519.
    public var keyStorage: String?
    public var caps: [String]
    /// The commands the node declared when it paired.
    public var declaredCommands: [String]
    public var flags: CapabilityFlags
    public var access: AccessRules
    /// Declared AND allowed AND not ruled out by its flags: what an invoke may ask for.
    public var allowedCommands: [String]
    public var connected: Bool
    /// Nil while disconnected.
    public var foreground: Bool?
    public var address: String?
    public var connectedAt: Date?
    public var pairingMethod: PairingMethod
    public var pairedAt: Date
    public var lastSeen: Date
    /// With the OpenClaw gateway protocol: the node's device ID at the gateway (hex SHA-256 of its
    /// Ed25519 key, the ID agents use), connected or not once it has one, and while connected its
    /// socket's state.
    public var gatewayDeviceId: String?
    public var gatewaySession: String?
    /// What that gateway holds for its own operator's approval, if anything.
    public var gatewayApproval: RuntimeStatus.GatewayApproval?
    /// Its latest push registration (the token is not shown).
    public var push: PushSummary?
    /// Sensitive patterns only an old default granted (`PairedNode.grantedByOldDefault`), until confirmed or denied; nil if none.
    public var grantedByOldDefault: [String]?
    /// What it declared and may not run, and why (a sensitive command: granted only on purpose); nil if nothing.
    public var withheld: [ApprovalGrant.Withheld]?
    /// One of OpenClaw's own apps: its device ID, client and the certificate fingerprint it was
    /// served when it was approved.
    public var openClawApp: OpenClawAppClaim?

    /// `now`: what "last seen" is for a node connected now (the caller's clock, not a hidden one).
    /// `gatewayDevice`: the node's device ID at an OpenClaw gateway when it is not connected (runtime.json's `openClawDevices`).
    public init(_ node: PairedNode, live: RuntimeStatus.Node?, policy: AccessPolicy, now: Date, gatewayDevice: String? = nil) {
        nodeId = node.nodeId.description
        displayName = node.details.displayName
        platform = node.details.platform
        osVersion = node.details.osVersion
        appVersion = node.details.appVersion
        deviceModel = node.details.deviceModel
        keyStorage = node.details.keyStorage
        caps = node.details.caps
        declaredCommands = node.details.commands
        flags = node.details.flags
        access = node.access
        grantedByOldDefault = node.grantedByOldDefault.isEmpty ? nil : node.grantedByOldDefault
        let withheld = ApprovalGrant.withheld(node.access, declared: node.details.commands)
        self.withheld = withheld.isEmpty ? nil : withheld
        openClawApp = node.openClawApp
        allowedCommands = node.details.commands.filter {
            policy.decide($0, rules: node.access, declared: node.details.commands, flags: node.details.flags, foreground: true) == .allow
        }
        connected = live != nil
        foreground = live?.foreground
        address = live?.address
        connectedAt = live?.connectedAt
        pairingMethod = node.pairingMethod
        pairedAt = node.pairedAt
        lastSeen = live == nil ? node.lastSeen : now
        gatewayDeviceId = live?.gatewayDeviceId ?? gatewayDevice
        gatewaySession = live?.gatewaySession
        gatewayApproval = live?.gatewayApproval
        push = node.push
    }
}

extension PairingState {
    public enum NodeLookupError: Error, Equatable, CustomStringConvertible {
        case unknown(String)
        case ambiguous(String, [String])

        public var description: String {
            switch self {
            case let .unknown(ref): "no paired node \"\(ref)\" (see `lanbridge nodes list`)"
            case let .ambiguous(ref, ids): "\"\(ref)\" names \(ids.count) nodes (\(ids.joined(separator: ", "))); use a node ID"
            }
        }
    }

    /// Finds a paired node by ID (any case, with or without dashes) or by its unique display name.
    public func node(matching reference: String) throws(NodeLookupError) -> PairedNode {
        if let id = Fingerprint(reference), let node = node(id) { return node }
        let named = paired.nodes.filter { $0.details.displayName == reference }
        if named.count == 1 { return named[0] }
        if named.count > 1 { throw .ambiguous(reference, named.map(\.nodeId.description)) }
        throw .unknown(reference)
    }
}
