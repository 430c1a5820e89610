import LanbridgeProtocol
import Testing

/// The addresses a bridge lists for its nodes (invites' `a=`, `welcome.addresses`).
struct ReachableAddressTests {
    let fingerprint = Fingerprint("7K2M-9QXD-3HJA-PW4T")!
    let secret = Array(UInt8(0)..<16)

    @Test func textFormsParseAndBadOnesDoNot() {
        #expect(ReachableAddress("10.0.0.5:18800", defaultPort: 1)?.description == "10.0.0.5:18800")
        #expect(ReachableAddress("10.0.0.5", defaultPort: 18790)?.description == "10.0.0.5:18790")
        #expect(ReachableAddress("[fd7a:115c:a1e0::5]:9", defaultPort: 1)?.description == "[fd7a:115c:a1e0::5]:9")
        #expect(ReachableAddress("fd7a:115c:a1e0::5", defaultPort: 7)?.host == "fd7a:115c:a1e0::5")
        #expect(ReachableAddress("bridge.tail1234.ts.net:443", defaultPort: 1)?.port == 443)
        for bad in ["", ":1", "host:0", "host:65536", "host:x", "a b:1", "[::1]x", "-lead:1", "10.0.0.5", "[::1]"] {
            #expect(ReachableAddress(bad, defaultPort: 0) == nil, "\(bad)")
        }
    }

    @Test func aBridgeListsTheLANFirstThenTheTailnetAndNeverLocalAddresses() {
        let found = ["100.101.102.103", "127.0.0.1", "fd7a:115c:a1e0::9", "203.0.113.4", "fe80::1", "192.168.1.10", "fd00::10", "169.254.3.3"]
            .map { ReachableAddress(host: $0, port: 18790) }
        #expect(
            ReachableAddress.preferred(configured: [], found: found).map(\.host)
                == ["192.168.1.10", "fd00::10", "100.101.102.103", "fd7a:115c:a1e0::9"], "at most four, by scope, IPv4 first")
        let named = ReachableAddress(host: "bridge.example.net", port: 443)
        #expect(
            ReachableAddress.preferred(configured: [named], found: found).map(\.host)
                == ["bridge.example.net", "192.168.1.10", "fd00::10", "100.101.102.103"], "the admin's entries come first")
    }

    @Test func aPeersListIsCutAndSkipsWhatDoesNotParse() {
        let sent = ["10.0.0.1:1", "garbage", "10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1", "10.0.0.5:1"]
        #expect(ReachableAddress.list(sent).map(\.description) == ["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1"])
        #expect(ReachableAddress.list(Array(repeating: "x", count: 100_000)).isEmpty, "a long list of junk is not even read whole")
    }

    @Test func anInviteCarriesUpToThreeMoreAddressesAndOldInvitesStillParse() throws {
        let alternates = ["100.64.0.7:18790", "[fd7a:115c:a1e0::7]:18790", "bridge.example.net:443", "10.9.9.9:1"].compactMap { ReachableAddress($0, defaultPort: 0) }
        let invite = InviteURI(host: "192.168.1.10", port: 18790, bridgeFingerprint: fingerprint, secret: secret, name: "Ada", alternates: alternates)
        #expect(invite.alternates.count == 3, "a fourth alternate would make five addresses")
        #expect(
            invite.description == "lanbridge://192.168.1.10:18790/invite?fp=7K2M-9QXD-3HJA-PW4T&s=000102030405060708090a0b0c0d0e0f"
                + "&a=100.64.0.7:18790&a=%5Bfd7a:115c:a1e0::7%5D:18790&a=bridge.example.net:443&name=Ada")
        #expect(InviteURI(invite.description) == invite)
        #expect(invite.addresses.map(\.description) == ["192.168.1.10:18790", "100.64.0.7:18790", "[fd7a:115c:a1e0::7]:18790", "bridge.example.net:443"])
        let old = try #require(InviteURI("lanbridge://192.168.1.10:18790/invite?fp=7K2M-9QXD-3HJA-PW4T&s=000102030405060708090a0b0c0d0e0f"))
        #expect(old.alternates.isEmpty && old.addresses.count == 1)
        let hostile = try #require(
            InviteURI(
                "lanbridge://192.168.1.10:18790/invite?fp=7K2M-9QXD-3HJA-PW4T&s=000102030405060708090a0b0c0d0e0f"
                    + "&a=evil%20host:1&a=10.0.0.1&a=10.0.0.2:2&a=10.0.0.3:3&a=10.0.0.4:4&a=10.0.0.5:5"))
        #expect(hostile.alternates.map(\.description) == ["10.0.0.2:2", "10.0.0.3:3", "10.0.0.4:4"], "bad entries skipped, the rest cut at three")
    }
}
