/// The small part of DNS (RFC 1035) a wide-area DNS-SD browser needs (RFC 6763 §11): a query for
/// one name and type, and the records of its answer. Pure and bounded: an answer is read in time
/// linear in its size, whatever a server (or a spoofer) sends: a compressed name may only point
/// backwards, through at most `maxPointers` jumps, to at most 255 bytes of name.
public enum DNS {
    /// The record types the browser asks for or reads (RFC 1035, 2782, 3596, 6891).
    public enum RecordType: UInt16, Sendable {
        case a = 1, ptr = 12, txt = 16, aaaa = 28, srv = 33, opt = 41
    }

    static let classIN: UInt16 = 1
    static let headerLength = 12
    static let maxNameLength = 255
    static let maxLabelLength = 63
    static let maxPointers = 32
    /// What the query offers to receive over UDP (EDNS(0), RFC 6891): the size DNS flag day 2020
    /// settled on, unfragmented on any path.
    static let udpPayloadSize: UInt16 = 1232

    /// A domain name as its labels; compared without regard to ASCII case, as DNS does.
    public struct Name: Hashable, Sendable, CustomStringConvertible {
        public private(set) var labels: [[UInt8]]

        public init(labels: [[UInt8]]) { self.labels = labels }

        /// From dotted text as a user types a domain (no escapes; a trailing dot is allowed). Nil
        /// for an empty label, a label over 63 bytes or a name over 255.
        public init?(_ text: String) {
            var trimmed = Substring(text)
            if trimmed.hasSuffix(".") { trimmed = trimmed.dropLast() }
            guard !trimmed.isEmpty else { return nil }
            let labels = trimmed.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
            guard labels.allSatisfy({ (1...DNS.maxLabelLength).contains($0.count) }),
                labels.reduce(1, { $0 + $1.count + 1 }) <= DNS.maxNameLength
            else { return nil }
            self.labels = labels
        }

        /// `label` in front: an instance or service label under a domain.
        public func prepending(_ label: [UInt8]) -> Name { Name(labels: [label] + labels) }

        /// Dotted, a dot or backslash inside a label escaped.
        public var description: String {
            labels.map { label in
                String(decoding: label, as: UTF8.self).replacingScalars { $0 == "\\" ? "\\\\" : $0 == "." ? "\\." : nil }
            }.joined(separator: ".")
        }

        private var folded: [[UInt8]] { labels.map { $0.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } } }
        public static func == (a: Name, b: Name) -> Bool { a.folded == b.folded }
        public func hash(into hasher: inout Hasher) { hasher.combine(folded) }

        var wire: [UInt8] { labels.flatMap { [UInt8($0.count)] + $0 } + [0] }
    }

    public enum RecordData: Equatable, Sendable {
        case ptr(Name)
        case srv(priority: UInt16, weight: UInt16, port: UInt16, target: Name)
        case txt([[UInt8]])
        case a([UInt8])
        case aaaa([UInt8])
        /// A type the browser does not read, kept only as its number.
        case other(UInt16)
    }

    public struct Record: Equatable, Sendable {
        public var name: Name
        public var ttl: UInt32
        public var data: RecordData
        public init(name: Name, ttl: UInt32, data: RecordData) { (self.name, self.ttl, self.data) = (name, ttl, data) }
    }

    public struct Question: Equatable, Sendable {
        public var name: Name
        public var type: UInt16
    }

    public struct Response: Equatable, Sendable {
        public var id: UInt16
        public var truncated: Bool
        /// 0: no error; 3: the name does not exist (an empty answer either way for a browser).
        public var rcode: UInt8
        /// The question it answers.
        public var question: Question?
        /// Answer, authority and additional records, in that order.
        public var records: [Record]
    }

    public enum ParseError: Error, Equatable, Sendable {
        case truncated, notAResponse, badName, badRecord
    }

    /// A recursive query (RD) for `name` and `type`, offering EDNS(0) for a larger UDP answer.
    public static func query(id: UInt16, name: Name, type: RecordType) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerLength + name.wire.count + 15)
        func u16(_ value: UInt16) { out += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        u16(id); u16(0x0100); u16(1); u16(0); u16(0); u16(1)
        out += name.wire
        u16(type.rawValue); u16(classIN)
        out.append(0)  // OPT: the root name, its class the payload size, no options
        u16(RecordType.opt.rawValue); u16(udpPayloadSize); out += [0, 0, 0, 0]; u16(0)
        return out
    }

    /// Reads a response whole, or says why it cannot.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> Response {
        var reader = Reader(bytes: bytes)
        let id = try reader.u16(), flags = try reader.u16()
        guard flags & 0x8000 != 0 else { throw .notAResponse }
        let questions = Int(try reader.u16())
        let count = Int(try reader.u16()) + Int(try reader.u16()) + Int(try reader.u16())
        var question: Question?
        for index in 0..<questions {
            let name = try reader.name()
            let type = try reader.u16()
            _ = try reader.u16()
            if index == 0 { question = Question(name: name, type: type) }
        }
        var records: [Record] = []
        // Every record takes at least 11 bytes: a count past what the bytes can hold is a lie.
        records.reserveCapacity(min(count, bytes.count / 11))
        for _ in 0..<count {
            let name = try reader.name()
            let type = try reader.u16(), _ = try reader.u16()
            let ttl = UInt32(try reader.u16()) << 16 | UInt32(try reader.u16())
            let length = Int(try reader.u16())
            let end = reader.offset + length
            guard end <= bytes.count else { throw .truncated }
            let data: RecordData
            switch RecordType(rawValue: type) {
            case .ptr?:
                data = .ptr(try reader.name())
            case .srv?:
                data = .srv(priority: try reader.u16(), weight: try reader.u16(), port: try reader.u16(), target: try reader.name())
            case .txt?:
                var strings: [[UInt8]] = []
                while reader.offset < end {
                    let size = Int(try reader.byte())
                    guard reader.offset + size <= end else { throw .badRecord }
                    strings.append(Array(bytes[reader.offset..<reader.offset + size]))
                    reader.offset += size
                }
                data = .txt(strings)
            case .a? where length == 4:
                data = .a(Array(bytes[reader.offset..<end]))
            case .aaaa? where length == 16:
                data = .aaaa(Array(bytes[reader.offset..<end]))
            case .a?, .aaaa?:
                throw .badRecord
            default:
                data = .other(type)
            }
            guard reader.offset <= end else { throw .badRecord }
            reader.offset = end
            records.append(Record(name: name, ttl: ttl, data: data))
        }
        return Response(id: id, truncated: flags & 0x0200 != 0, rcode: UInt8(flags & 0x000F), question: question, records: records)
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func byte() throws(ParseError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() throws(ParseError) -> UInt16 {
            UInt16(try byte()) << 8 | UInt16(try byte())
        }

        /// A name at `offset`, following compression pointers (RFC 1035 §4.1.4) strictly backwards;
        /// `offset` moves past the name as written here.
        mutating func name() throws(ParseError) -> Name {
            var labels: [[UInt8]] = []
            var length = 1
            var at = offset
            var resume: Int?
            var jumps = 0
            while true {
                guard at < bytes.count else { throw .truncated }
                let size = Int(bytes[at])
                switch size & 0xC0 {
                case 0x00:
                    if size == 0 {
                        offset = resume ?? at + 1
                        return Name(labels: labels)
                    }
                    length += size + 1
                    guard length <= DNS.maxNameLength, at + 1 + size <= bytes.count else { throw .badName }
                    labels.append(Array(bytes[at + 1..<at + 1 + size]))
                    at += 1 + size
                case 0xC0:
                    guard at + 1 < bytes.count else { throw .truncated }
                    let target = (size & 0x3F) << 8 | Int(bytes[at + 1])
                    jumps += 1
                    guard target < at, jumps <= DNS.maxPointers else { throw .badName }
                    if resume == nil { resume = at + 2 }
                    at = target
                default:
                    throw .badName  // 0x40 and 0x80: extended label types, unused
                }
            }
        }
    }
}
