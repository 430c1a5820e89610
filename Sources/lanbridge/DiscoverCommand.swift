import ArgumentParser
import FoundationEssentials
import LanbridgeDiscovery
import LanbridgeBridge
import LanbridgeFiles
import LanbridgeNode
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "Find bridges on the LAN (mDNS), or print the records that advertise this one in a DNS zone.",
        subcommands: [Browse.self, Records.self],
        defaultSubcommand: Browse.self
    )
}

extension DiscoverCommand {
    struct Browse: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List lanbridge bridges advertised on the LAN (mDNS, through avahi-daemon), or in a DNS zone; the default.",
            discussion: """
                Names, addresses and fingerprints here are hints from the network: a node trusts only the key its handshake proves. If nothing shows up, run `lanbridge doctor`.

                With --domain, asks unicast DNS for `_lanbridge._tcp` in that zone instead (wide-area DNS-SD, as nodes given that domain do): a check that the records from `lanbridge discover records` are served.

                  $ lanbridge discover browse --domain bridges.example.com
                  $ lanbridge discover browse --domain bridges.example.com --resolver 100.100.100.100
                """
        )

        @Option(help: "How long to listen: 2s, 500ms is written 0.5s.") var timeout = Duration(argument: "2s")!
        @Option(help: "Browse this DNS zone over unicast DNS instead of mDNS.") var domain: String?
        @Option(help: ArgumentHelp("The DNS server to ask for --domain (default: /etc/resolv.conf's).", valueName: "host[:port]")) var resolver: String?
        @Flag(help: "Print JSON.") var json = false

        /// --domain's browser, if given; nil otherwise.
        private func wideArea() throws -> WideAreaBrowser? {
            if resolver != nil, domain == nil { throw ValidationError("--resolver goes with --domain") }
            guard let domain else { return nil }
            do { return try WideAreaBrowser(domain: domain, resolver: resolver) } catch { throw ValidationError("\(error)") }
        }

        func validate() throws { _ = try wideArea() }

        func run() async throws {
            let bridges: [DiscoveredBridge]
            if let browser = try wideArea(), let domain {
                do { bridges = try await browser.browse() } catch {
                    Output.note("lanbridge: cannot browse \(domain): \(error)")
                    throw ExitCode(69)  // EX_UNAVAILABLE
                }
            } else {
                if case let .failure(error) = AvahiProbe.check() {
                    Output.note("lanbridge: cannot browse: \(error). Fix: apt-get install avahi-daemon && systemctl start avahi-daemon")
                    throw ExitCode(69)  // EX_UNAVAILABLE
                }
                bridges = await AvahiBrowser().bridges(within: timeout.seconds)
            }
            if json { return try Output.json(bridges) }
            guard !bridges.isEmpty else { return print(domain.map { "No bridges listed in \($0)." } ?? "No bridges found in \(Output.duration(timeout.seconds)).") }
            Output.table(
                ["NAME", "ADDRESS", "PORT", "FINGERPRINT (hint)", "PROTOCOL"],
                bridges.map {
                    [$0.name, $0.addresses.joined(separator: ","), String($0.port), $0.shortFingerprint ?? "?", $0.versions ?? "?"]
                })
        }
    }

    struct Records: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the DNS-SD records that advertise this bridge in a unicast DNS zone (wide-area, RFC 6763 §11).",
            discussion: """
                For nodes that cannot hear the bridge's mDNS (another subnet, a VPN or tailnet): put these records in a zone you control, and a node that browses `_lanbridge._tcp` in that domain finds the bridge. The TXT is the one mDNS carries; as on the LAN, everything here is a hint, and the node trusts only the key its handshake proves.

                  $ lanbridge discover records --domain bridges.example.com --host 100.101.102.103
                  $ lanbridge discover records --domain home.arpa --json

                Defaults come from the running daemon (its name and port) or this machine. A --host that is an IP address is published as lanbridge.DOMAIN with an A or AAAA record; a host name is used as it is.
                """)
        @OptionGroup var state: StateOptions
        @Option(help: "The DNS zone to advertise in, e.g. bridges.example.com.") var domain: String
        @Option(help: "Address or host name nodes dial. Default: the running daemon's address, else this host's first LAN address (as for invites).") var host: String?
        @Option(help: "Port nodes dial. Default: the running daemon's, else 18790.") var port: Port?
        @Option(help: "The instance name. Default: the running daemon's name, else the host name.") var name: String?
        @Option(help: "Time to live of each record, in seconds.") var ttl = 300
        @Flag(help: "Print JSON: the records as {name, type, data}.") var json = false

        func validate() throws {
            guard InviteURI.validHost(domain) != nil, !domain.contains(":") else { throw ValidationError("--domain takes a DNS name, e.g. bridges.example.com") }
            if let host, InviteURI.validHost(host) == nil { throw ValidationError("--host takes an address or a host name") }
            guard (1...604_800).contains(ttl) else { throw ValidationError("--ttl takes 1 to 604800 seconds") }
        }

        func run() throws {
            try Output.run {
                let runtime = RuntimeStatusFile(directory: state.directory).read()
                let first = ListeningAddress.dialable(host: host, port: port?.value, runtime: runtime)[0]
                let (dial, dialPort) = (first.host, first.port)
                let isAddress = GatewayEndpoint.isIPAddress(dial)
                let key = try IdentityStore(directory: state.directory).publicKey(creating: false)
                let instance = name ?? runtime?.bridgeName ?? ProcessInfo.processInfo.hostName
                let records = WideAreaRecords(
                    domain: domain, instance: instance, target: isAddress ? "lanbridge" : dial,
                    port: dialPort, addresses: isAddress ? [dial] : [],
                    advertisement: BridgeAdvertisement(shortFingerprint: Fingerprint(publicKey: key).short, name: instance))
                if json { return try Output.json(records.records) }
                print(records.zoneFile(ttl: ttl))
            }
        }
    }
}
