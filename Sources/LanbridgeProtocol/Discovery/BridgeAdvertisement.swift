/// What a bridge says about itself in DNS-SD (PROTOCOL.md §10). Every field is an untrusted hint:
/// a node decides whom to trust by the key in the Noise handshake, never by these.
public struct BridgeAdvertisement: Equatable, Sendable {
    /// At most 15 characters (RFC 6335).
    public static let serviceType = "_lanbridge._tcp"
    public static let maxTXTLength = 200

    public var versions: VersionRange
    public var shortFingerprint: String
    public var name: String

    public init(versions: VersionRange = .supported, shortFingerprint: String, name: String) {
        (self.versions, self.shortFingerprint, self.name) = (versions, shortFingerprint, name)
    }

    /// TXT strings, `txtvers` first. The name is shortened if the record would exceed 200 bytes.
    public var txt: [String] {
        var entries = ["txtvers=1", "pv=\(versions.min)-\(versions.max)", "id=\(shortFingerprint)"]
        // Each string costs its length plus one length byte.
        let budget = Self.maxTXTLength - entries.reduce(0) { $0 + $1.utf8.count + 1 } - "name=".count - 1
        var shortened = name
        while !shortened.isEmpty, shortened.utf8.count > max(0, budget) { shortened.removeLast() }
        entries.append("name=\(shortened)")
        return entries
    }

    /// Reads hints back; nil unless `txtvers=1` and the required keys are present and well formed.
    public init?(txt: [String]) {
        var fields: [String: String] = [:]
        for entry in txt {
            guard let eq = entry.firstIndex(of: "=") else { continue }
            let key = entry[..<eq].lowercased()
            if fields[key] == nil { fields[key] = String(entry[entry.index(after: eq)...]) }  // first wins (RFC 6763 §6.4)
        }
        guard fields["txtvers"] == "1", let pv = fields["pv"], let id = fields["id"] else { return nil }
        let bounds = pv.split(separator: "-").compactMap { UInt8($0) }
        guard bounds.count == 2, let versions = VersionRange(min: bounds[0], max: bounds[1]) else { return nil }
        self.init(versions: versions, shortFingerprint: id, name: fields["name"] ?? "")
    }
}
