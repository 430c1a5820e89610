/// The DNS-SD records that advertise a bridge in a unicast DNS zone (RFC 6763 §11, "wide-area"),
/// for nodes that cannot hear its mDNS: the same service type and TXT as on the LAN.
public struct WideAreaRecords: Equatable, Sendable {
    public struct Record: Equatable, Sendable, Codable {
        public var name: String
        public var type: String
        public var data: String
        public init(name: String, type: String, data: String) { (self.name, self.type, self.data) = (name, type, data) }
    }

    public let records: [Record]

    /// `domain`: the zone, e.g. `bridges.example.com`. `target`: the host name nodes dial, in that
    /// zone or absolute; `addresses`: its A/AAAA records, written when given (a host name that
    /// already resolves needs none).
    public init(domain: String, instance: String, target: String, port: Int, addresses: [String], advertisement: BridgeAdvertisement) {
        let zone = Self.absolute(domain)
        let service = "\(BridgeAdvertisement.serviceType).\(zone)"
        let instanceName = "\(Self.escape(instance)).\(service)"
        let host = target.hasSuffix(".") ? target : target.contains(".") ? target + "." : "\(target).\(zone)"
        var records = [
            // RFC 6763 §11: where a browser finds the domains to browse, then the service types.
            Record(name: "b._dns-sd._udp.\(zone)", type: "PTR", data: zone),
            Record(name: "lb._dns-sd._udp.\(zone)", type: "PTR", data: zone),
            Record(name: "_services._dns-sd._udp.\(zone)", type: "PTR", data: service),
            Record(name: service, type: "PTR", data: instanceName),
            Record(name: instanceName, type: "SRV", data: "0 0 \(port) \(host)"),
            Record(name: instanceName, type: "TXT", data: advertisement.txt.map(Self.quote).joined(separator: " ")),
        ]
        for address in addresses { records.append(Record(name: host, type: address.contains(":") ? "AAAA" : "A", data: address)) }
        self.records = records
    }

    /// Master-file lines (RFC 1035 §5), one record each, with `ttl`.
    public func zoneFile(ttl: Int = 300) -> String {
        records.map { "\($0.name)\t\(ttl)\tIN\t\($0.type)\t\($0.data)" }.joined(separator: "\n")
    }

    static func absolute(_ name: String) -> String { name.hasSuffix(".") ? name : name + "." }

    /// An instance name is one label of any UTF-8: a dot, a backslash, white space and other
    /// unprintable bytes are escaped as a master file needs (`\.`, `\\`, `\032`).
    static func escape(_ label: String) -> String {
        var out = ""
        for byte in label.utf8 {
            switch byte {
            case UInt8(ascii: "."), UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: ";"), UInt8(ascii: "("), UInt8(ascii: ")"):
                out += "\\" + String(UnicodeScalar(byte))
            case 0x21...0x7E: out += String(UnicodeScalar(byte))
            default: out += "\\" + String(repeating: "0", count: 3 - String(byte).count) + String(byte)
            }
        }
        return out
    }

    /// A TXT character-string in quotes, `"` and `\` escaped.
    static func quote(_ text: String) -> String {
        var out = "\""
        for c in text {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }
}
