@testable import LanbridgeProtocol
import Testing

struct BridgeAdvertisementTests {
    @Test func txtCarriesTheHintsInOrderAndReadsBack() {
        let ad = BridgeAdvertisement(shortFingerprint: "7K2M-9QXD", name: "Office bridge")
        #expect(ad.txt == ["txtvers=1", "pv=1-1", "id=7K2M-9QXD", "name=Office bridge"])
        #expect(BridgeAdvertisement(txt: ad.txt) == ad)
        #expect(BridgeAdvertisement.serviceType.count <= 15, "RFC 6335")
    }

    @Test func aLongNameIsShortenedToKeepTheRecordWithin200Bytes() {
        let ad = BridgeAdvertisement(shortFingerprint: "7K2M-9QXD", name: String(repeating: "é", count: 300))
        let wireSize = ad.txt.reduce(0) { $0 + $1.utf8.count + 1 }
        #expect(wireSize <= BridgeAdvertisement.maxTXTLength)
        #expect(ad.txt.last!.hasPrefix("name=éé"))
    }

    @Test func hintsThatDoNotParseAreIgnored() {
        #expect(BridgeAdvertisement(txt: ["txtvers=2", "pv=1-1", "id=x"]) == nil, "unknown txtvers")
        #expect(BridgeAdvertisement(txt: ["txtvers=1", "pv=3-1", "id=x"]) == nil, "inverted range")
        #expect(BridgeAdvertisement(txt: ["txtvers=1", "id=x"]) == nil, "no pv")
        #expect(BridgeAdvertisement(txt: ["txtvers=1", "pv=1-2", "id=A", "id=B"])?.shortFingerprint == "A", "first value wins")
    }
}

/// Wide-area DNS-SD records (RFC 6763 §11): an instance name is one label, escaped for a master file.
struct WideAreaRecordsUnitTests {
    @Test func instanceLabelsAreEscapedForAMasterFile() {
        #expect(WideAreaRecords.escape("Kitchen bridge") == #"Kitchen\032bridge"#)
        #expect(WideAreaRecords.escape(#"a.b\c"d;(e)"#) == #"a\.b\\c\"d\;\(e\)"#)
        #expect(WideAreaRecords.escape("Café") == #"Caf\195\169"#)
        #expect(WideAreaRecords.quote(#"name=say "hi" \ bye"#) == #""name=say \"hi\" \\ bye""#)
    }

    @Test func theChainRunsFromTheDomainToTheAddress() {
        let records = WideAreaRecords(
            domain: "example.com", instance: "B", target: "lanbridge", port: 18790, addresses: ["10.0.0.1"],
            advertisement: BridgeAdvertisement(shortFingerprint: "ABCD-EFGH", name: "B"))
        #expect(records.records.map(\.type) == ["PTR", "PTR", "PTR", "PTR", "SRV", "TXT", "A"])
        #expect(records.records[3] == .init(name: "_lanbridge._tcp.example.com.", type: "PTR", data: "B._lanbridge._tcp.example.com."))
        #expect(records.records[4].data == "0 0 18790 lanbridge.example.com.")
        #expect(records.zoneFile(ttl: 60).split(separator: "\n").last == "lanbridge.example.com.\t60\tIN\tA\t10.0.0.1")
    }
}
