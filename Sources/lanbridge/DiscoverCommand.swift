import ArgumentParser
import Foundation
import LanbridgeDiscovery
import LanbridgeProtocol

struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "List lanbridge bridges advertised on the LAN (mDNS, through avahi-daemon).",
        discussion: "Names, addresses and fingerprints here are hints from the network: a node trusts only the key its handshake proves. If nothing shows up, run `lanbridge doctor`."
    )

    @Option(help: "How long to listen: 2s, 500ms is written 0.5s.") var timeout = Duration(argument: "2s")!
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        if case let .failure(error) = AvahiProbe.check() {
            Output.note("lanbridge: cannot browse: \(error). Fix: apt-get install avahi-daemon && systemctl start avahi-daemon")
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        let bridges = await AvahiBrowser().bridges(within: timeout.seconds)
        if json { return try Output.json(bridges) }
        guard !bridges.isEmpty else { return print("No bridges found in \(Output.duration(timeout.seconds)).") }
        Output.table(["NAME", "ADDRESS", "PORT", "FINGERPRINT (hint)", "PROTOCOL"], bridges.map {
            [$0.name, $0.addresses.joined(separator: ","), String($0.port), $0.shortFingerprint ?? "?", $0.versions ?? "?"]
        })
    }
}
