import LanbridgeProtocol
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
