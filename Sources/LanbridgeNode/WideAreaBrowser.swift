#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeProtocol
import NIOCore

/// `BridgeDiscovery` over unicast DNS (wide-area DNS-SD, RFC 6763 §11): browses
/// `_lanbridge._tcp.DOMAIN` in a zone the operator filled with `lanbridge discover records`, for
/// nodes that cannot hear the bridge's mDNS (another subnet, a VPN, a tailnet). Asks again every
/// `refresh` seconds and reports what came and went. As with mDNS, everything here is a hint: the
/// node trusts only the key its handshake proves.
public struct WideAreaBrowser: BridgeDiscovery {
    /// The zone to browse, e.g. `bridges.example.com`.
    public var domain: String
    /// Servers to ask; empty: the `nameserver` lines of /etc/resolv.conf.
    public var nameservers: [ReachableAddress]
    /// Seconds between passes.
    public var refresh: Double
    /// Instances read per pass: a zone that lists more is cut there.
    public static let maxInstances = 8

    /// `domain`: the zone, e.g. `bridges.example.com`. `nameservers`: `HOST` or `HOST:PORT` entries
    /// to ask instead of the system's.
    public init(domain: String, nameservers: [ReachableAddress] = [], refresh: Double = 60) {
        (self.domain, self.nameservers, self.refresh) = (domain, nameservers, refresh)
    }

    /// From what a user types: a domain, and optionally the server to ask (`HOST` or
    /// `HOST:PORT`, port 53 by default). Throws a message naming the bad one.
    public init(domain: String, resolver: String?) throws(InvalidArgument) {
        guard DNS.Name(domain) != nil else { throw InvalidArgument(description: "\(domain) is not a DNS name, e.g. bridges.example.com") }
        let servers = try resolver.map { text throws(InvalidArgument) -> [ReachableAddress] in
            guard let server = ReachableAddress(text, defaultPort: 53) else { throw InvalidArgument(description: "\(text) is not host[:port]") }
            return [server]
        }
        self.init(domain: domain, nameservers: servers ?? [])
    }

    /// A domain or server that cannot be used, and why.
    public struct InvalidArgument: Error, CustomStringConvertible {
        /// What is wrong, for the user.
        public let description: String
    }

    /// Found and removed bridges until the consumer stops iterating.
    public func events() -> AsyncStream<DiscoveryEvent> {
        AsyncStream { continuation in
            let task = Task {
                var shown: [String: DiscoveredBridge] = [:]
                while !Task.isCancelled {
                    if let bridges = try? await browse() {
                        let now = Dictionary(bridges.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                        for name in shown.keys.sorted() where now[name] == nil { continuation.yield(.removed(name: name)) }
                        for bridge in bridges where shown[bridge.name] != bridge { continuation.yield(.found(bridge)) }
                        shown = now
                    }
                    try? await Task.sleep(for: .milliseconds(Int(refresh * 1000)))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// One pass: the bridges the zone lists now. Throws if the domain is not a DNS name or no
    /// server answers.
    public func browse() async throws -> [DiscoveredBridge] {
        guard let zone = DNS.Name(domain) else { throw UnicastResolver.NoAnswer(description: "\(domain) is not a DNS name") }
        let servers = nameservers.isEmpty ? Self.nameservers(resolvConf: (try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8)) ?? "") : nameservers
        let resolver = UnicastResolver(nameservers: servers)
        return try await Self.bridges(in: zone) { try await resolver.lookup($0, $1) }
    }

    /// PTR for the service, then each instance's SRV and TXT, then its target's addresses (from
    /// the additional records when the server sent them, else asked for).
    static func bridges(in zone: DNS.Name, lookup: (DNS.Name, DNS.RecordType) async throws -> [DNS.Record]) async throws -> [DiscoveredBridge] {
        let service = zone.prepending(Array("_tcp".utf8)).prepending(Array("_lanbridge".utf8))
        var instances: [DNS.Name] = []
        for record in try await lookup(service, .ptr) where record.name == service {
            if case let .ptr(instance) = record.data, instance.labels.count == service.labels.count + 1, !instances.contains(instance) {
                instances.append(instance)
            }
        }
        var bridges: [DiscoveredBridge] = []
        for instance in instances.prefix(maxInstances) {
            let records = try await lookup(instance, .srv) + lookup(instance, .txt)
            let srv = records.compactMap { record -> (priority: UInt16, port: UInt16, target: DNS.Name)? in
                guard record.name == instance, case let .srv(priority, _, port, target) = record.data else { return nil }
                return (priority, port, target)
            }.min { $0.priority < $1.priority }
            guard let srv, srv.port > 0 else { continue }
            let txt =
                records.lazy.compactMap { record -> [String]? in
                    guard record.name == instance, case let .txt(strings) = record.data else { return nil }
                    return strings.map { String(decoding: $0, as: UTF8.self) }
                }.first ?? []
            var addresses = Self.addresses(of: srv.target, in: records)
            if addresses.isEmpty {
                addresses = Self.addresses(of: srv.target, in: try await lookup(srv.target, .a) + lookup(srv.target, .aaaa))
            }
            guard !addresses.isEmpty else { continue }
            let label = String(decoding: instance.labels[0], as: UTF8.self)
            bridges.append(
                DiscoveredBridge(
                    name: "\(label).\(zone)", host: srv.target.description, addresses: Array(addresses.prefix(ReachableAddress.maxCount)),
                    port: Int(srv.port), advertisement: BridgeAdvertisement(txt: txt)))
        }
        return bridges
    }

    static func addresses(of host: DNS.Name, in records: [DNS.Record]) -> [String] {
        var out: [String] = []
        for record in records where record.name == host {
            let text: String? =
                switch record.data {
                case let .a(bytes): bytes.map(String.init).joined(separator: ".")
                case let .aaaa(bytes): try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0).ipAddress
                default: nil
                }
            if let text, !out.contains(text) { out.append(text) }
        }
        return out
    }

    /// The `nameserver` lines of a resolv.conf, in order, on port 53.
    public static func nameservers(resolvConf: String) -> [ReachableAddress] {
        resolvConf.split(whereSeparator: \.isNewline).compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { return nil }
            let host = words[1].split(separator: "%").first.map(String.init) ?? String(words[1])
            return InviteURI.validHost(host).map { ReachableAddress(host: $0, port: 53) }
        }
    }
}
