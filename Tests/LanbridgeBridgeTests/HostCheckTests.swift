import LanbridgeBridge
import Testing

/// DNS rebinding: only names that cannot be rebound, on the listener's own port.
struct HostCheckTests {
    @Test(arguments: ["127.0.0.1:18791", "localhost:18791", "LocalHost:18791", "[::1]:18791", "192.168.1.10:18791", "[fe80::1]:18791"])
    func namesThatCannotBeReboundAreServed(host: String) {
        #expect(HostCheck.allows(host, port: 18791))
    }

    @Test(arguments: [
        nil, "", "evil.example:18791", "localhost.evil.example:18791", "127.0.0.1.nip.io:18791", "127.0.0.1",
        "localhost", "127.0.0.1:18792", "localhost:", "[::1]", "[::1]18791", "::1:18791", "127.0.0.1:18791 ",
        "127.0.0.1:+18791", "999.0.0.1:18791", "[evil.example]:18791",
    ])
    func anythingElseIsMisdirected(host: String?) {
        #expect(!HostCheck.allows(host, port: 18791))
    }
}
