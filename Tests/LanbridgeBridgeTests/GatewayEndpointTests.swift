@testable import LanbridgeBridge
@testable import LanbridgeCore
import Testing

struct GatewayEndpointTests {
    @Test func loopbackWebSocketsAreAccepted() throws {
        let endpoint = try GatewayEndpoint("ws://127.0.0.1:18789", allowRemote: false)
        #expect(endpoint.host == "127.0.0.1" && endpoint.port == 18789 && endpoint.path == "/")
        #expect(try GatewayEndpoint("ws://[::1]:9/gw?x=1", allowRemote: false).path == "/gw?x=1")
        #expect(try GatewayEndpoint("ws://localhost:9", allowRemote: false).host == "localhost")
        let remote = try GatewayEndpoint("wss://gateway.example/agent", allowRemote: true)
        #expect(remote.secure && remote.port == 443 && remote.path == "/agent")
        #expect(try GatewayEndpoint("wss://localhost:8443", allowRemote: false).secure, "TLS on loopback is fine too")
        let unix = try GatewayEndpoint("unix:/run/gateway/gateway.sock", allowRemote: false)
        #expect(unix.target == .unix(path: "/run/gateway/gateway.sock") && unix.description == "unix:/run/gateway/gateway.sock")
    }

    @Test(arguments: [
        ("ws://192.168.1.5:18789", false, "not a loopback address"),
        ("ws://gateway.example:18789", true, "needs wss://"),
        ("wss://192.0.2.7:443", true, "not an IP address"),
        ("http://127.0.0.1:18789", false, "scheme must be ws or wss"),
        ("ws://user:secret@127.0.0.1:1", false, "not in the URL"),
        ("127.0.0.1:18789", false, "not a URL"),
        ("ws://127.0.0.1.evil.example:1", false, "not a loopback address"),
        ("unix:relative.sock", false, "absolute path"),
    ])
    func everythingElseIsRefusedWithTheReason(_ url: String, _ allowRemote: Bool, _ reason: String) {
        do {
            _ = try GatewayEndpoint(url, allowRemote: allowRemote)
            Issue.record("\(url) was accepted")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }
}
