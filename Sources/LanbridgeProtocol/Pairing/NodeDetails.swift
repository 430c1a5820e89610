#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

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
    /// A browser node's word on its key (issue 64): `non-extractable` (a WebCrypto `CryptoKey`
    /// the page can use but never read) or `extractable` (32 bytes the page keeps). Anything else
    /// is dropped by `sanitized()`.
    public var keyStorage: String?

    public init(
        displayName: String, platform: String, osVersion: String? = nil, appVersion: String? = nil,
        deviceModel: String? = nil, caps: [String] = [], commands: [String] = [], flags: CapabilityFlags = .init()
    ) {
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

extension NodeDetails {
    public enum Limits {
        public static let text = 64
        public static let listItems = 128
    }

    /// What an unauthenticated device sent, made safe to store and to print in an operator's
    /// terminal: control, format, invisible and unassigned characters (ANSI escapes, bidirectional
    /// overrides, Hangul fillers) removed, text and lists capped.
    public func sanitized() -> NodeDetails {
        func clean(_ text: String) -> String {
            let visible = text.unicodeScalars.filter { !CharacterClass.isInvisibleOrUnassigned($0) }
            let trimmed = String(String.UnicodeScalarView(visible)).trimmingWhitespace()
            return String(trimmed.prefix(Limits.text))
        }
        func cleanList(_ items: [String]) -> [String] {
            Array(items.prefix(Limits.listItems).map(clean).filter { !$0.isEmpty })
        }
        var safe = self
        safe.displayName = clean(displayName).isEmpty ? "unnamed device" : clean(displayName)
        safe.platform = clean(platform).lowercased()
        safe.osVersion = osVersion.map(clean)
        safe.appVersion = appVersion.map(clean)
        safe.deviceModel = deviceModel.map(clean)
        safe.caps = cleanList(caps)
        safe.commands = cleanList(commands)
        safe.keyStorage = keyStorage.flatMap { ["extractable", "non-extractable"].contains($0) ? $0 : nil }
        return safe
    }
}
