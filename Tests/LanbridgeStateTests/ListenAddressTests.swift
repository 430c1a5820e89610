import LanbridgeState
import Testing

struct ListenAddressTests {
    @Test func loopbackAddressesAreAccepted() throws {
        #expect(try ListenAddress("127.0.0.1:18791", allowRemote: false) == ListenAddress("127.0.0.1:18791", allowRemote: true))
        #expect(try ListenAddress("127.1.2.3:0", allowRemote: false).host == "127.1.2.3")
        #expect(try ListenAddress("[::1]:9100", allowRemote: false).description == "[::1]:9100")
        #expect(try ListenAddress("localhost:9100", allowRemote: false).host == "127.0.0.1")
    }

    @Test func otherAddressesNeedAllowRemote() throws {
        #expect(throws: ListenAddress.Problem.notLoopback("0.0.0.0")) { try ListenAddress("0.0.0.0:9100", allowRemote: false) }
        #expect(throws: ListenAddress.Problem.notLoopback("::")) { try ListenAddress("[::]:9100", allowRemote: false) }
        #expect(throws: ListenAddress.Problem.notLoopback("127.example.org")) { try ListenAddress("127.example.org:9100", allowRemote: false) }
        #expect(try ListenAddress("0.0.0.0:9100", allowRemote: true).port == 9100)
    }

    @Test func malformedAddressesSayWhat() {
        for text in ["", "9100", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "::1:9100", "[::1]9100", ":9100", "127.0.0.1:-1"] {
            #expect(throws: ListenAddress.Problem.malformed(text)) { try ListenAddress(text, allowRemote: false) }
        }
    }
}
