/// The lanbridge wire protocol versions a peer speaks, inclusive.
public struct VersionRange: Sendable, Equatable, CustomStringConvertible {
    public let min: UInt8
    public let max: UInt8

    public init?(min: UInt8, max: UInt8) {
        guard min >= 1, min <= max else { return nil }
        self.min = min
        self.max = max
    }

    /// What this build speaks.
    public static let supported = VersionRange(min: 1, max: 1)!

    /// The highest version both ranges contain, if any.
    public func highestCommon(with other: VersionRange) -> UInt8? {
        let top = Swift.min(max, other.max)
        return top >= Swift.max(min, other.min) ? top : nil
    }

    public func contains(_ version: UInt8) -> Bool { (min...max).contains(version) }

    public var description: String { "\(min)-\(max)" }
}
