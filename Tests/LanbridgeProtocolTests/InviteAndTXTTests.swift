import LanbridgeProtocol
import Testing

struct InviteAndTXTTests {
    let fingerprint = Fingerprint("7K2M-9QXD-3HJA-PW4T")!
    let secret = Array(UInt8(0)..<16)

    @Test(arguments: ["::1", "fe80::1", "192.168.1.10", "kitchen.local"])
    func anInviteURIRoundTripsWhateverTheHost(_ host: String) throws {
        let invite = InviteURI(host: host, port: 18790, bridgeFingerprint: fingerprint, secret: secret, name: "Ada's tablet & co")
        #expect(InviteURI(invite.description) == invite, "\(invite.description)")
        if host.contains(":") { #expect(invite.description.hasPrefix("lanbridge://[\(host)]:18790/")) }
    }

    @Test func aHostileHostNeverTrapsAndNeverParses() {
        let invite = InviteURI(host: "bad host/x", port: 99999, bridgeFingerprint: fingerprint, secret: secret)
        #expect(!invite.description.isEmpty)
        #expect(InviteURI(invite.description) == nil)
        #expect(InviteURI("lanbridge://example.com:0/invite?fp=7K2M-9QXD-3HJA-PW4T&s=000102030405060708090a0b0c0d0e0f") == nil, "port 0")
    }

    @Test func aHugeFingerprintInTXTNeverTraps() {
        let advertisement = BridgeAdvertisement(shortFingerprint: String(repeating: "A", count: 300), name: "Kitchen")
        #expect(advertisement.txt.last == "name=")
        #expect(
            BridgeAdvertisement(shortFingerprint: "7K2M-9QXD", name: String(repeating: "é", count: 300)).txt
                .reduce(0) { $0 + $1.utf8.count + 1 } <= BridgeAdvertisement.maxTXTLength)
    }
}
