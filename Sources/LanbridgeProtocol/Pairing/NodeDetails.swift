/// What a node says about itself when it asks to pair. Claims, never trust: the bridge decides
/// what a node may do from the access rules, not from these lists alone.
public struct NodeDetails: Codable, Equatable, Sendable {
    public var displayName: String
    public var platform: String
    public var osVersion: String?
    public var appVersion: String?
    public var deviceModel: String?
    public var caps: [String]
    public var commands: [String]
    public var flags: CapabilityFlags

    public init(displayName: String, platform: String, osVersion: String? = nil, appVersion: String? = nil,
                deviceModel: String? = nil, caps: [String] = [], commands: [String] = [], flags: CapabilityFlags = .init()) {
        self.displayName = displayName
        self.platform = platform
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.deviceModel = deviceModel
        self.caps = caps
        self.commands = commands
        self.flags = flags
    }
}

public struct CapabilityFlags: Codable, Equatable, Sendable {
    /// Commands that draw or capture need the app in the foreground.
    public var requiresForeground: Bool
    public var supportsInputInjection: Bool

    public init(requiresForeground: Bool = false, supportsInputInjection: Bool = false) {
        self.requiresForeground = requiresForeground
        self.supportsInputInjection = supportsInputInjection
    }
}
