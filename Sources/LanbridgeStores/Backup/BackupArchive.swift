import FoundationEssentials

/// A POSIX ustar archive of flat, regular files: what `lanbridge backup` writes and `restore`
/// reads. Reading is strict and bounded: a checksum that does not add up, an entry that is not a
/// regular file (a symlink, a directory, a device), a name with a path in it, a size past the
/// bounds or an archive that stops before its two zero blocks is refused whole, before anything
/// is written anywhere.
public enum BackupArchive {
    public struct Entry: Equatable, Sendable {
        public let name: String
        public let bytes: [UInt8]
        public init(name: String, bytes: [UInt8]) { (self.name, self.bytes) = (name, bytes) }
    }

    public struct Refused: Error, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { "not a lanbridge backup: \(reason)" }
    }

    static let block = 512
    /// Bounds for what a backup may hold (the audit log is the large one).
    public static let maxEntryBytes = 256 << 20
    public static let maxEntries = 64

    public static func write(_ entries: [Entry], modified: Int) -> [UInt8] {
        var out: [UInt8] = []
        for entry in entries {
            var header = [UInt8](repeating: 0, count: block)
            func put(_ text: String, at offset: Int, _ length: Int) {
                for (i, byte) in text.utf8.prefix(length).enumerated() { header[offset + i] = byte }
            }
            func octal(_ value: Int, width: Int) -> String {
                let digits = String(value, radix: 8)
                return String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits
            }
            put(entry.name, at: 0, 100)
            put(octal(0o600, width: 8), at: 100, 8)
            put(octal(0, width: 8), at: 108, 8)
            put(octal(0, width: 8), at: 116, 8)
            put(octal(entry.bytes.count, width: 12), at: 124, 12)
            put(octal(modified, width: 12), at: 136, 12)
            header[156] = UInt8(ascii: "0")
            put("ustar", at: 257, 6)
            put("00", at: 263, 2)
            for i in 148..<156 { header[i] = UInt8(ascii: " ") }
            let sum = header.reduce(0) { $0 + Int($1) }
            put(octal(sum, width: 7), at: 148, 7)
            header[155] = UInt8(ascii: " ")
            out += header + entry.bytes + [UInt8](repeating: 0, count: (block - entry.bytes.count % block) % block)
        }
        return out + [UInt8](repeating: 0, count: 2 * block)
    }

    public static func read(_ bytes: [UInt8]) throws(Refused) -> [Entry] {
        var entries: [Entry] = []
        var offset = 0
        while true {
            guard offset + block <= bytes.count else { throw Refused(reason: "it ends in the middle (truncated?)") }
            let header = Array(bytes[offset..<offset + block])
            if header.allSatisfy({ $0 == 0 }) {
                guard offset + 2 * block <= bytes.count, bytes[offset + block..<offset + 2 * block].allSatisfy({ $0 == 0 }) else {
                    throw Refused(reason: "it ends in the middle (truncated?)")
                }
                return entries
            }
            guard let stored = number(header[148..<156]) else { throw Refused(reason: "a header's checksum is unreadable") }
            let sum = header.enumerated().reduce(0) { $0 + ((148..<156).contains($1.offset) ? 0x20 : Int($1.element)) }
            guard stored == sum else { throw Refused(reason: "a header's checksum does not add up (not a tar archive, or damaged)") }
            let name = String(decoding: header[0..<100].prefix { $0 != 0 }, as: UTF8.self)
            let prefix = header[345..<500].prefix { $0 != 0 }
            guard prefix.isEmpty, !name.isEmpty, !name.contains("/"), name != ".", name != "..",
                name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else { throw Refused(reason: "an entry's name is not a plain file name: \(String(reflecting: name))") }
            guard header[156] == UInt8(ascii: "0") || header[156] == 0 else {
                throw Refused(reason: "\(name) is not a regular file (a link, a directory or a device)")
            }
            guard let size = number(header[124..<136]), size <= maxEntryBytes else { throw Refused(reason: "\(name)'s size is unreadable or too large") }
            let start = offset + block
            guard start + size <= bytes.count else { throw Refused(reason: "it ends in the middle of \(name) (truncated?)") }
            guard !entries.contains(where: { $0.name == name }) else { throw Refused(reason: "\(name) is in it twice") }
            entries.append(Entry(name: name, bytes: Array(bytes[start..<start + size])))
            guard entries.count <= maxEntries else { throw Refused(reason: "more than \(maxEntries) entries") }
            offset = start + size + (block - size % block) % block
        }
    }

    /// An octal field: optional leading spaces, octal digits, then only NUL or space padding.
    private static func number(_ field: ArraySlice<UInt8>) -> Int? {
        let padding: (UInt8) -> Bool = { $0 == 0 || $0 == UInt8(ascii: " ") }
        let value = field.drop { $0 == UInt8(ascii: " ") }
        let digits = value.prefix { !padding($0) }
        guard !digits.isEmpty, digits.count <= 11, value.dropFirst(digits.count).allSatisfy(padding) else { return nil }
        return Int(String(decoding: digits, as: UTF8.self), radix: 8)  // nil for a non-octal digit
    }
}
