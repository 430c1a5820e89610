import Foundation
import LanbridgeBridge
import LanbridgeFiles
import LanbridgeState
import Testing

/// Issue 39: what `serve` runs with is decided in one place from config.json and the flags; the
/// CLI only parses them.
struct BridgeConfigurationTests {
    let directory = StateDirectory(url: URL(fileURLWithPath: "/nonexistent/lanbridge-test"))

    func make(_ settings: BridgeSettings = BridgeSettings(), _ edit: (inout BridgeConfiguration.Overrides) -> Void = { _ in }) throws -> (BridgeConfiguration, [String]) {
        var overrides = BridgeConfiguration.Overrides()
        overrides.gatewayTokenFromEnvironment = "token"
        edit(&overrides)
        var warnings: [String] = []
        let configuration = try BridgeConfiguration(
            stateDirectory: directory, settings: settings, overrides: overrides, interfaces: [],
            hostName: "desk", warn: { warnings.append($0) })
        return (configuration, warnings)
    }

    @Test func aFlagWinsOverTheConfigAndTheDefaultsFollowFromWhatWasGiven() throws {
        var settings = BridgeSettings()
        settings.console.listen = try ListenAddress("127.0.0.1:2000", allowRemote: false)
        let (fromConfig, _) = try make(settings)
        #expect(fromConfig.console?.port == 2000 && !fromConfig.consoleOptional)
        #expect(fromConfig.name == "desk")
        let (fromFlag, _) = try make(settings) {
            $0.uiListen = "127.0.0.1:3000"; $0.name = "kitchen"
        }
        #expect(fromFlag.console?.port == 3000 && fromFlag.name == "kitchen")
        let (byDefault, _) = try make()
        #expect(byDefault.consoleOptional, "the default console address may be taken without stopping the start")
        let (off, _) = try make(settings) { $0.noUI = true }
        #expect(off.console == nil)
        let (timing, _) = try make {
            $0.pairingTTL = 600; $0.pairingMaxWait = 60
        }
        #expect(timing.pairingTiming.hardCap == 600, "the hard cap is never below the TTL")
    }

    @Test func aFlagGivenWrongIsAUsageErrorAndABadFileAConfigurationOne() throws {
        #expect(throws: BridgeConfiguration.Problem.self) {
            try make {
                $0.canvasListen = "not a port"; $0.gatewayProtocol = "openclaw"
            }
        }
        do {
            _ = try make { $0.gatewayAuth = "maybe" }
            Issue.record("accepted --gateway-auth maybe")
        } catch let problem as BridgeConfiguration.Problem {
            #expect(problem.kind == .usage && problem.description.contains("proof or bearer"))
        }
        do {
            _ = try make {
                $0.gatewayTokenFromEnvironment = nil; $0.gatewayTokenFile = "/nonexistent/token"
            }
            Issue.record("accepted a token file that is not there")
        } catch let problem as BridgeConfiguration.Problem {
            #expect(problem.kind == .configuration && problem.description.contains("does not exist"))
        }
    }

    @Test func theCanvasFollowsTheGatewayAndIsOffWhereItCannotBeRelayed() throws {
        let (plain, _) = try make()
        #expect(plain.canvas == nil, "a lanbridge gateway with no canvas.upstream has no canvas host")
        let (openClaw, _) = try make { $0.gatewayProtocol = "openclaw" }
        #expect(openClaw.canvas?.openClaw == true && openClaw.canvas?.optional == true)
        let (remote, warnings) = try make {
            $0.gatewayProtocol = "openclaw"; $0.gatewayURL = "wss://gateway.example:443"; $0.allowRemoteGateway = true
        }
        #expect(remote.canvas == nil && warnings.contains { $0.contains("canvas relay off") })
        let (noToken, said) = try make { $0.gatewayTokenFromEnvironment = nil }
        #expect(noToken.gateway == nil && said.contains { $0.contains("gateway link off") })
    }
}
