import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// The wide-area browser's DNS reader (issue 25): queries as RFC 1035 writes them, answers read
/// whole, and hostile answers refused in time linear in their size.
struct DNSMessageTests {
    static let service = DNS.Name("_lanbridge._tcp.lanbridge.test")!

    /// A response to a PTR query for `service`, built by hand: header, question, then records.
    static func response(id: UInt16 = 7, flags: UInt16 = 0x8180, counts: (UInt16, UInt16, UInt16, UInt16) = (1, 1, 0, 0), body: [UInt8]) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        return u16(id) + u16(flags) + u16(counts.0) + u16(counts.1) + u16(counts.2) + u16(counts.3) + body
    }

    static func wire(_ name: DNS.Name) -> [UInt8] { name.labels.flatMap { [UInt8($0.count)] + $0 } + [0] }

    @Test func aQueryIsARecursiveQuestionWithEDNS() {
        let query = DNS.query(id: 0xBEEF, name: Self.service, type: .ptr)
        #expect(Array(query.prefix(12)) == [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1])
        #expect(Array(query[12..<12 + Self.wire(Self.service).count]) == Self.wire(Self.service))
        #expect(Array(query.suffix(15)) == [0, 12, 0, 1, 0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0], "PTR IN, then OPT offering 1232 bytes")
    }

    @Test func anAnswerWithCompressedNamesIsReadWhole() throws {
        // Question at 12; the PTR's owner points at it (0xC00C); its target is "bridge\ 1" + pointer.
        let question = Self.wire(Self.service) + [0, 12, 0, 1]
        let target: [UInt8] = [8] + Array("bridge 1".utf8) + [0xC0, 12]
        let answer: [UInt8] = [0xC0, 12, 0, 12, 0, 1, 0, 0, 0x0E, 0x10, 0, UInt8(target.count)] + target
        let parsed = try DNS.parse(Self.response(body: question + answer))
        #expect(parsed.id == 7 && parsed.rcode == 0 && !parsed.truncated)
        #expect(parsed.question?.name == Self.service && parsed.question?.type == 12)
        #expect(parsed.records == [DNS.Record(name: Self.service, ttl: 3600, data: .ptr(Self.service.prepending(Array("bridge 1".utf8))))])
        #expect(DNS.Name("_LANBRIDGE._TCP.Lanbridge.Test.") == Self.service, "names compare without case")
    }

    /// An answer dnspython wrote (the fuzzer's seed): PTR, then SRV, TXT, A and AAAA as additionals.
    @Test func anAnswerFromDnspythonIsRead() throws {
        let parsed = try DNS.parse(Array(try Data(contentsOf: Repository.url("Fuzz/corpus/dns/answer"))))
        let instance = Self.service.prepending(Array("test-bridge".utf8)), host = try #require(DNS.Name("lanbridge.lanbridge.test"))
        #expect(
            parsed.records == [
                DNS.Record(name: Self.service, ttl: 300, data: .ptr(instance)),
                DNS.Record(name: instance, ttl: 300, data: .srv(priority: 0, weight: 0, port: 18790, target: host)),
                DNS.Record(name: instance, ttl: 300, data: .txt(["txtvers=1", "pv=1-1", "id=CD66-7ZZ3", "name=test-bridge"].map { Array($0.utf8) })),
                DNS.Record(name: host, ttl: 300, data: .a([100, 64, 77, 1])),
                DNS.Record(name: host, ttl: 300, data: .aaaa([0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
            ])
    }

    @Test(arguments: [
        ("a pointer to itself", [0xC0, 12] as [UInt8]),
        ("a pointer forwards", [0xC0, 40]),
        ("a pointer past the end", [0xC0]),
        ("an extended label type", [0x41, 0x61, 0]),
        ("a label past the end", [10, 0x61]),
    ])
    func aHostileNameIsRefused(_ what: String, _ name: [UInt8]) {
        #expect(throws: DNS.ParseError.self, "\(what)") { try DNS.parse(Self.response(counts: (1, 0, 0, 0), body: name + [0, 12, 0, 1])) }
    }

    @Test func aNameLongerThan255BytesIsRefusedEvenThroughPointers() {
        // 5 labels of 63 bytes = 320 bytes of name, made of pointers back to one 63-byte label.
        var body: [UInt8] = [63] + [UInt8](repeating: 0x61, count: 63) + [0, 0, 12, 0, 1]
        var at = 12
        for _ in 0..<5 {
            let here = 12 + body.count
            body += [63] + [UInt8](repeating: 0x62, count: 63) + [0xC0 | UInt8(at >> 8), UInt8(at & 0xFF)]
            at = here
        }
        body += [0xC0 | UInt8(at >> 8), UInt8(at & 0xFF), 0, 12, 0, 1]
        #expect(throws: DNS.ParseError.badName) { try DNS.parse(Self.response(counts: (7, 0, 0, 0), body: body)) }
    }

    @Test func countsThatLieAndRecordsThatOverrunAreRefused() {
        let question = Self.wire(Self.service) + [0, 12, 0, 1]
        #expect(throws: DNS.ParseError.truncated) { try DNS.parse(Self.response(counts: (1, 65535, 0, 0), body: question)) }
        let overrun: [UInt8] = [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0]  // an A record with 2 of its 4 bytes
        #expect(throws: DNS.ParseError.truncated) { try DNS.parse(Self.response(body: question + overrun)) }
        let shortA: [UInt8] = [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 3, 10, 0, 0]
        #expect(throws: DNS.ParseError.badRecord) { try DNS.parse(Self.response(body: question + shortA)) }
        #expect(throws: DNS.ParseError.notAResponse) { try DNS.parse(Self.response(flags: 0x0100, counts: (1, 0, 0, 0), body: question)) }
    }

    /// A name may chain pointers backwards, but only so far: the work per name is bounded (255
    /// bytes, 32 jumps) whatever the answer, so reading is linear in its size.
    @Test func aChainOfMoreThan32PointersIsRefused() throws {
        func chain(_ jumps: Int) -> [UInt8] {
            var body = Self.wire(Self.service) + [0, 12, 0, 1]  // at 12
            var at = 12
            for _ in 0..<jumps - 1 {
                let here = 12 + body.count
                body += [0xC0 | UInt8(at >> 8), UInt8(at & 0xFF), 0, 12, 0, 1]
                at = here
            }
            return Self.response(counts: (UInt16(jumps + 1), 0, 0, 0), body: body + [0xC0 | UInt8(at >> 8), UInt8(at & 0xFF), 0, 12, 0, 1])
        }
        #expect(try DNS.parse(chain(32)).question?.name == Self.service)
        #expect(throws: DNS.ParseError.badName) { try DNS.parse(chain(33)) }
    }

    @Test func aLargeAnswerIsReadWhole() throws {
        let question = Self.wire(Self.service) + [0, 12, 0, 1]
        var body = question
        var count: UInt16 = 0
        // Each record: owner = pointer to the question, TXT of 200 bytes.
        while body.count < 60_000 {
            body += [0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 201, 200] + [UInt8](repeating: 0x61, count: 200)
            count += 1
        }
        let parsed = try DNS.parse(Self.response(counts: (1, count, 0, 0), body: body))
        #expect(parsed.records.count == Int(count))
    }
}
