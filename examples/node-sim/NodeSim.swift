import ArgumentParser
import Dispatch
import Foundation
import LanbridgeDiscovery
import LanbridgeCrypto
import LanbridgeNode
import LanbridgeProtocol
import Logging

/// A simulated node, built only on the LanbridgeNode library. It prints one line per event, which
/// people and tests can read: `code 123456 request k3f9q2xm`, `paired …`, `connected …`.
@main
struct NodeSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lanbridge-node-sim",
        abstract: "A simulated lanbridge node: pairs, stays connected and answers a few commands.",
        discussion: """
        Commands it answers: canvas.present, canvas.hide, canvas.navigate, canvas.snapshot (a PNG it renders), canvas.a2ui.pushJSONL, system.info, device.echo; with --camera also camera.list and camera.snap.

        Send SIGUSR1, or type "bg" / "fg" on stdin, to move it to the background or foreground. Other stdin lines:
          agent TEXT        call the gateway's agent method (prints "agent ok …" or "agent error CODE …")
          voice TEXT        the same, as a voice transcript ("source": "voice")
          call METHOD       call any gateway method (the bridge refuses all but agent and system-event)
          event NAME        send an event to the gateway
          push PROVIDER TOKEN [ENVIRONMENT [TOPIC]]
                            register where to wake it (prints "push ok null" or "push error CODE …")

        canvas.snapshot takes {"width","height"} (up to 4096) and {"delayMs"}; device.echo takes {"delayMs"} to answer late, {"wideKeys": N} to answer an object of N keys.
        """
    )

    @Option(help: "Node state directory (its key and the pinned bridge).") var stateDir: String
    @Option(help: ArgumentHelp("Bridge address.", valueName: "host:port")) var connect: String?
    @Flag(help: "Find the bridge with mDNS instead of --connect; once paired, keep browsing and try what it finds first.") var discover = false
    @Option(help: "Also find the bridge in this DNS domain (wide-area DNS-SD: `lanbridge discover records`), like --discover.") var domain: String?
    @Option(help: ArgumentHelp("The DNS server to ask for --domain (default: /etc/resolv.conf's).", valueName: "host[:port]")) var resolver: String?
    @Option(help: "A lanbridge:// invite URI: pair without a code.") var invite: String?
    @Option(help: "Display name.") var name = "node-sim"
    @Option(help: "Platform: ios, android, macos or linux.") var platform = "ios"
    @Flag(help: "Start in the background.") var background = false
    @Flag(help: "Also declare camera.list and camera.snap (a rendered frame): sensitive, so granted only on purpose.") var camera = false
    @Option(help: "Log level for the client library.") var logLevel = "warning"

    func validate() throws {
        guard ["ios", "android", "macos", "linux"].contains(platform) else { throw ValidationError("unknown platform \(platform)") }
        if let invite, InviteURI(invite) == nil { throw ValidationError("not a lanbridge invite URI: \(invite)") }
        if resolver != nil, domain == nil { throw ValidationError("--resolver goes with --domain") }
        if let domain { do { _ = try WideAreaBrowser(domain: domain, resolver: resolver) } catch { throw ValidationError("\(error)") } }
        if connect == nil && invite == nil && !discover && domain == nil && !FileManager.default.fileExists(atPath: stateDir + "/bridge.json") {
            throw ValidationError("give --connect host:port, --invite URI or --discover (once paired, none: the node dials what it learned)")
        }
    }

    func run() async throws {
        let inviteURI = invite.flatMap(InviteURI.init)
        let paired = FileManager.default.fileExists(atPath: stateDir + "/bridge.json")
        // Paired and no --connect: the client dials what it learned (and what mDNS finds).
        let target = paired && connect == nil && inviteURI == nil ? nil
            : browser != nil && inviteURI == nil && connect == nil ? await discovered() : endpoint(inviteURI)
        if target == nil, !(paired && connect == nil && inviteURI == nil) { throw ValidationError(browser != nil ? "no bridge found" : "bad --connect") }
        let commands = ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot", "canvas.a2ui.pushJSONL", "system.info", "device.echo"]
            + (camera ? ["camera.list", "camera.snap"] : [])
        let details = NodeDetails(displayName: name, platform: platform, osVersion: "sim-1", appVersion: "0.1.0",
                                  deviceModel: "node-sim", caps: ["canvas", "device"], commands: commands,
                                  flags: CapabilityFlags(requiresForeground: true, supportsInputInjection: false))
        let level = Logger.Level(rawValue: logLevel) ?? .warning
        var configuration = NodeClient.Configuration(stateDirectory: URL(fileURLWithPath: stateDir), details: details, foreground: !background)
        configuration.discovery = browser
        let client = try NodeClient(configuration: configuration,
                                    logger: Logger(label: "node-sim") { var h = StreamLogHandler.standardError(label: $0); h.logLevel = level; return h })
        say("node \(client.nodeID)")
        say("crypto \(CryptoInfo.backend)")
        let canvas = Canvas()
        await register(client, canvas: canvas, details: details)

        let foreground = Toggle(!background)
        signal(SIGUSR1, SIG_IGN)
        let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1)
        usr1.setEventHandler { Task { await move(client, toForeground: foreground.flip()) } }
        usr1.resume()
        Thread.detachNewThread {
            var calls = 0
            while let line = readLine() {
                let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1).map(String.init)
                calls += 1
                let key = "\(client.nodeID)-\(calls)-\(Int(Date().timeIntervalSince1970))"
                switch (words.first ?? "", words.count > 1 ? words[1] : "") {
                case ("bg", _), ("background", _): if foreground.set(false) { Task { await move(client, toForeground: false) } }
                case ("fg", _), ("foreground", _): if foreground.set(true) { Task { await move(client, toForeground: true) } }
                case let ("agent", text):
                    Task { await report("agent") { () async throws(LanbridgeError) in try await client.call("agent", params: ["message": .string(text)], idempotencyKey: key) } }
                case let ("voice", text):
                    Task { await report("voice") { () async throws(LanbridgeError) in
                        try await client.call("agent", params: ["message": .string(text), "source": "voice"], idempotencyKey: key)
                    } }
                case let ("call", method):
                    Task { await report("call") { () async throws(LanbridgeError) in try await client.call(method, params: [:], idempotencyKey: key) } }
                case let ("event", name):
                    Task { await client.send(event: name, payload: ["at": .number(Date().timeIntervalSince1970)]); say("event sent \(name)") }
                case let ("push", rest):
                    // push PROVIDER TOKEN [ENVIRONMENT [TOPIC]]
                    let parts = rest.split(separator: " ").map(String.init)
                    Task { await report("push") { () async throws(LanbridgeError) in
                        try await client.registerPush(provider: parts.first ?? "", token: parts.count > 1 ? parts[1] : "",
                                                      environment: parts.count > 2 ? parts[2] : nil, topic: parts.count > 3 ? parts[3] : nil)
                        return nil
                    } }
                case ("canvas-refresh", _):
                    Task { await report("canvas-refresh") { () async throws(LanbridgeError) in
                        let access = try await client.refreshCanvas()
                        return .string(access.url)
                    } }
                default: break
                }
            }
        }

        let events = client.events  // subscribed now, before run: no event is missed
        let printer = Task {
            // From the start, or the last disconnect, to connected: how long finding the bridge took.
            var since = ContinuousClock.now
            for await event in events {
                switch event {
                case let .verificationCode(code, requestId): say("code \(code) request \(requestId)")
                case let .pairingPending(requestId): say("pending \(requestId)")
                case let .paired(fingerprint): say("paired \(fingerprint)")
                case let .connected(bridgeName):
                    say("connected \(bridgeName)")
                    let took = (ContinuousClock.now - since).components
                    let ms = took.seconds * 1000 + took.attoseconds / 1_000_000_000_000_000
                    if let pin = await client.bridge { say("via \(ReachableAddress(host: pin.host, port: pin.port)) in \(ms) ms") }
                case let .disconnected(reason):
                    since = ContinuousClock.now
                    say("disconnected \(reason)")
                case let .error(code, message): say("error \(code) \(message)")
                // A test tool: it prints the capability URL, which a real app keeps to itself.
                case let .canvas(access): say("canvas \(access.url) \(access.tlsSha256) \(access.expiresAtMs)")
                }
            }
        }
        defer { printer.cancel() }
        do {
            if let inviteURI {
                try await client.run(invite: inviteURI)
            } else if let (host, port) = target {
                try await client.run(host: host, port: port)
            } else {
                try await client.run()
            }
        } catch let error as NodeClient.ClientError {
            say("fatal \(error)")
            throw ExitCode(2)
        }
    }

    /// mDNS (--discover), wide-area DNS-SD (--domain), or both.
    private var browser: (any BridgeDiscovery)? {
        let wideArea = domain.flatMap { try? WideAreaBrowser(domain: $0, resolver: resolver) }  // checked in validate()
        let sources: [any BridgeDiscovery] = (discover ? [AvahiBrowser()] : []) + (wideArea.map { [$0] } ?? [])
        return sources.count > 1 ? CombinedDiscovery(sources) : sources.first
    }

    /// Finds bridges with the browser: connects to the only one, or asks which when there are several.
    private func discovered() async -> (String, Int)? {
        let bridges = await browser?.bridges(within: 3) ?? []
        for (i, bridge) in bridges.enumerated() {
            say("found \(i + 1) \(bridge.name) \(bridge.addresses.first ?? "?"):\(bridge.port) id=\(bridge.shortFingerprint ?? "?")")
        }
        guard !bridges.isEmpty else { return nil }
        var choice = 0
        if bridges.count > 1 {
            say("which bridge? (1-\(bridges.count))")
            guard let line = readLine(), let n = Int(line), (1...bridges.count).contains(n) else { return nil }
            choice = n - 1
        }
        guard let address = bridges[choice].addresses.first else { return nil }
        say("connecting \(bridges[choice].name)")
        return (address, bridges[choice].port)
    }

    private func endpoint(_ invite: InviteURI?) -> (String, Int)? {
        if let connect {
            let parts = connect.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]) else { return nil }
            return (String(parts[0]), port)
        }
        return invite.map { ($0.host, $0.port) }
    }

    private func register(_ client: NodeClient, canvas: Canvas, details: NodeDetails) async {
        // Every command announces itself first, so people and tests see it arrive.
        func handle(_ command: String, _ body: @escaping NodeClient.Handler) async {
            await client.handle(command) { params in
                say("invoke \(command)")
                do { return try await body(params) } catch is CancellationError {
                    say("cancelled \(command)")  // invoke.cancel reached the handler
                    throw CancellationError()
                }
            }
        }
        await handle("canvas.present") { params in
            canvas.set(visible: true, url: params?["url"]?.stringValue)
            return ["visible": true]
        }
        await handle("canvas.hide") { _ in
            canvas.set(visible: false, url: nil)
            return ["visible": false]
        }
        // A typed handler: params that are not a Navigate are answered INVALID_PARAMS by the library.
        struct Navigate: Codable, Sendable { var url: String }
        await client.handle("canvas.navigate") { (params: Navigate) in
            say("invoke canvas.navigate")
            canvas.set(visible: true, url: params.url)
            return params
        }
        // OpenClaw's agent sends A2UI as JSON lines: counted, as a renderer would apply them.
        await handle("canvas.a2ui.pushJSONL") { params in
            let lines = params?["jsonl"]?.stringValue?.split(separator: "\n").count ?? 0
            return ["applied": .number(Double(lines))]
        }
        await handle("canvas.snapshot") { params in
            func size(_ key: String, _ fallback: Int) -> Int {
                if case let .number(n)? = params?[key], n >= 1 { return min(Int(n), 4096) } else { return fallback }
            }
            if case let .number(ms)? = params?["delayMs"], ms > 0 { try await Task.sleep(for: .milliseconds(Int(ms))) }  // a slow capture
            let (width, height) = (size("width", 320), size("height", 200))
            let png = canvas.render(width: width, height: height)
            return ["format": "png", "width": .number(Double(width)), "height": .number(Double(height)),
                    "base64": .string(Data(png).base64EncodedString())]
        }
        if camera {
            await handle("camera.list") { _ in ["cameras": [["id": "back", "facing": "back"]]] }
            await handle("camera.snap") { _ in
                ["format": "png", "width": 64, "height": 48, "base64": .string(Data(canvas.render(width: 64, height: 48)).base64EncodedString())]
            }
        }
        let nodeID = client.nodeID
        await handle("system.info") { _ in
            ["nodeId": .string(nodeID), "name": .string(details.displayName), "platform": .string(details.platform),
             "os": .string(details.osVersion ?? ""), "app": .string(details.appVersion ?? "")]
        }
        await handle("device.echo") { params in
            if case let .number(ms)? = params?["delayMs"], ms > 0 { try await Task.sleep(for: .milliseconds(Int(ms))) }
            // The shape a hostile node picks (an object of many short keys), for the benchmarks.
            if case let .number(keys)? = params?["wideKeys"], keys >= 1 {
                return .object(Dictionary(uniqueKeysWithValues: (0..<min(Int(keys), 2_000_000)).map { ("k\($0)", JSONValue.number(0)) }))
            }
            return params ?? .null
        }
    }
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func report(_ what: String, _ call: () async throws(LanbridgeError) -> JSONValue?) async {
    do {
        let payload = try await call()
        let json = (try? JSONEncoder().encode(payload ?? .null)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        say("\(what) ok \(json)")
    } catch {
        say("\(what) error \(error.code) \(error.message)")
    }
}

func move(_ client: NodeClient, toForeground foreground: Bool) async {
    await client.setForeground(foreground)
    say("foreground \(foreground)")
}

/// Thread-safe flag flipped from a signal handler and a stdin reader.
final class Toggle: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Bool
    init(_ value: Bool) { self.value = value }
    func flip() -> Bool { lock.withLock { value.toggle(); return value } }
    /// Sets the value; returns whether it changed.
    func set(_ newValue: Bool) -> Bool { lock.withLock { defer { value = newValue }; return value != newValue } }
}

/// The simulated canvas: what it shows determines the snapshot's colours.
final class Canvas: @unchecked Sendable {
    private let lock = NSLock()
    private var visible = false
    private var url = "about:blank"

    func set(visible: Bool, url: String?) {
        lock.withLock {
            self.visible = visible
            if let url { self.url = url }
        }
    }

    func render(width: Int, height: Int) -> [UInt8] {
        let (visible, url) = lock.withLock { (self.visible, self.url) }
        let seed = url.utf8.reduce(UInt32(2166136261)) { ($0 ^ UInt32($1)) &* 16777619 }
        let (r, g, b) = (UInt8(seed & 0xFF), UInt8(seed >> 8 & 0xFF), UInt8(seed >> 16 & 0xFF))
        return PNG.encode(width: width, height: height) { x, y in
            guard visible else { return (24, 24, 24) }
            let band = (x / 20 + y / 20) % 2 == 0
            return band ? (r, g, b) : (UInt8(x * 255 / width), UInt8(y * 255 / height), b / 2)
        }
    }
}
