import LanbridgeStores
import Testing

/// The backup's tar reader alone (issue 51 §4): what it writes reads back; a damaged header, a
/// size that is not octal or an archive cut short is refused whole.
struct BackupArchiveTests {
    let entries = [BackupArchive.Entry(name: "a.json", bytes: Array("{}".utf8)), BackupArchive.Entry(name: "b", bytes: Array(repeating: 7, count: 513))]

    @Test func whatItWritesReadsBack() throws {
        #expect(try BackupArchive.read(BackupArchive.write(entries, modified: 1_800_000_000)) == entries)
    }

    @Test func aDamagedArchiveIsRefusedWhole() {
        let good = BackupArchive.write(entries, modified: 0)
        var checksum = good
        checksum[0] ^= 1  // the name's first byte: the header no longer adds up
        var size = good
        size[124] = UInt8(ascii: "9")  // not an octal digit; the checksum is fixed up below
        let sum = size[0..<512].enumerated().reduce(0) { $0 + ((148..<156).contains($1.offset) ? 0x20 : Int($1.element)) }
        for (i, byte) in Array(String(String(sum, radix: 8).reversed()).padding(toLength: 6, withPad: "0", startingAt: 0).reversed()).enumerated() {
            size[148 + i] = UInt8(ascii: byte.unicodeScalars.first!)
        }
        for (label, bytes, reason) in [
            ("checksum", checksum, "checksum does not add up"), ("size", size, "size is unreadable"),
            ("cut", Array(good.dropLast(600)), "ends in the middle"),
        ] {
            #expect(throws: BackupArchive.Refused.self, "\(label)") { try BackupArchive.read(bytes) }
            do { _ = try BackupArchive.read(bytes) } catch { #expect(error.reason.contains(reason), "\(label): \(error)") }
        }
    }
}
