// swift-format-ignore-file
// (its marked blocks are README.md's code, character for character)
import Foundation
import LanbridgeNode
import LanbridgeNodeTesting
import LanbridgeProtocol
import Testing

// The README's "Writing a node" Swift snippets, verbatim between the markers: they compile here,
// the test below runs them, and `theReadmeShowsExactlyThisCode` fails if the two drift apart.

// README: app
struct Navigate: Codable, Sendable { var url: String }      // typed: other params get INVALID_PARAMS

func makeNode(stateDirectory: URL, transport: (any NodeTransport)? = nil) async throws -> NodeClient {
    var configuration = NodeClient.Configuration(stateDirectory: stateDirectory, details: NodeDetails(
        displayName: "Ada's phone", platform: "ios", commands: ["canvas.navigate", "device.echo"]))
    configuration.transport = transport                      // nil: TCP; an app's tests pass a FakeBridge
    let client = try NodeClient(configuration: configuration)
    await client.handle("canvas.navigate") { (p: Navigate) in p }
    await client.handle("device.echo") { params in params ?? .null }
    let events = client.events                               // one subscription each; as many as you like
    Task { for await event in events { print(event) } }      // .verificationCode("844355", …), .connected(…)
    return client
}

func serve(_ client: NodeClient) async throws {              // until cancelled; reconnects with backoff
    try await client.run(host: "192.168.1.10", port: 18790)   // or run(invite:); once paired, run() dials what it learned
}

func appDidEnterBackground(_ client: NodeClient) async {
    await client.setForeground(false)                        // foreground-only commands now fail fast
}

func askTheAgent(_ client: NodeClient) async throws(LanbridgeError) -> JSONValue? {
    try await client.call("agent", params: ["message": "hi"], idempotencyKey: UUID().uuidString,
                          timeout: .seconds(30))             // FORBIDDEN, TIMEOUT, UNAVAILABLE, …
}

func didRegisterForRemoteNotifications(_ client: NodeClient, token: String) async throws(LanbridgeError) {
    try await client.registerPush(provider: "apns", token: token, // hex; kept 0600 by the bridge
                                  environment: "production", topic: "com.example.companion")
}
// README: end

// README: app test
@Test func theNodeEchoesOncePaired() async throws {
    let bridge = FakeBridge()                                // import LanbridgeNodeTesting
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
    let client = try await makeNode(stateDirectory: directory, transport: bridge)
    let serving = Task { try await serve(client) }
    let request = await bridge.nextPairingRequest()          // request.code: what the app showed
    try await bridge.approve(request.requestId)
    let nodeID = await bridge.nextConnection()
    #expect(try await bridge.invoke(nodeID, "canvas.navigate", params: ["url": "https://example.com"])
            == ["url": "https://example.com"])
    serving.cancel()
}
// README: end

struct ReadmeSnippetTests {
    /// Every marked block above appears in README.md exactly as written here.
    @Test func theReadmeShowsExactlyThisCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let readme = try String(contentsOf: here.deletingLastPathComponent().appendingPathComponent("../../README.md").standardized, encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let marker = "// README" + ": "                      // spelled apart, so this line is no marker
        let blocks = source.components(separatedBy: marker).dropFirst().filter { !$0.hasPrefix("end") }
            .map { String($0.drop { $0 != "\n" }.dropFirst()) }
        #expect(blocks.count == 2)
        for block in blocks {
            let shown = readme.contains("```swift\n" + block + "```\n")
            #expect(shown, "README.md lacks:\n\(block)")
        }
    }

    @Test func theAppSnippetsRunAgainstTheFakeBridge() async throws {
        let bridge = FakeBridge()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        await bridge.answerCalls { _, params in .success(["heard": params ?? .null]) }
        let client = try await makeNode(stateDirectory: directory, transport: bridge)
        let connected = client.events
        let serving = Task { try await serve(client) }
        let request = await bridge.nextPairingRequest()
        try await bridge.approve(request.requestId)
        let nodeID = await bridge.nextConnection()
        for await event in connected { if case .connected = event { break } }
        #expect(try await askTheAgent(client) == ["heard": ["message": "hi"]])
        try await didRegisterForRemoteNotifications(client, token: String(repeating: "c0", count: 32))
        _ = await bridge.next { if case .pushRegistered(nodeID, _) = $0 { true } else { nil } }
        await appDidEnterBackground(client)
        _ = await bridge.next { if case .appState(nodeID, false) = $0 { true } else { nil } }
        #expect(await bridge.isInForeground(nodeID) == false)
        serving.cancel()
        _ = await serving.result
    }
}
