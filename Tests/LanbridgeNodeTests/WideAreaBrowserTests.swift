import LanbridgeProtocol
@testable import LanbridgeNode
import NIOCore
import NIOPosix
import Testing

/// What the wide-area browser makes of a zone's records (issue 25), with lookups answered from a
/// table: the real resolver against dnsmasq is in ReachEndToEndTests.
struct WideAreaBrowserTests {
    static let zone = DNS.Name("lanbridge.test")!
    static let service = zone.prepending(Array("_tcp".utf8)).prepending(Array("_lanbridge".utf8))
    static func instance(_ label: String) -> DNS.Name { service.prepending(Array(label.utf8)) }
    static let host = DNS.Name("kitchen.lanbridge.test")!
    static let txt: DNS.RecordData = .txt(["txtvers=1", "pv=1-1", "id=CD66-7ZZ3", "name=Kitchen"].map { Array($0.utf8) })

    final class Zone: @unchecked Sendable {
        var records: [DNS.Record] = []
        var asked: [String] = []
        func lookup(_ name: DNS.Name, _ type: DNS.RecordType) -> [DNS.Record] {
            asked.append("\(name) \(type)")
            return records.filter { $0.name == name }
        }
    }

    @Test func theServicesInstancesBecomeBridgesWithTheirHints() async throws {
        let zone = Zone()
        zone.records = [
            .init(name: Self.service, ttl: 60, data: .ptr(Self.instance("Kitchen bridge"))),
            .init(name: Self.service, ttl: 60, data: .ptr(Self.zone)),  // not an instance of the service: ignored
            .init(name: Self.instance("Kitchen bridge"), ttl: 60, data: .srv(priority: 10, weight: 0, port: 1, target: Self.zone)),
            .init(name: Self.instance("Kitchen bridge"), ttl: 60, data: .srv(priority: 0, weight: 0, port: 18790, target: Self.host)),
            .init(name: Self.instance("Kitchen bridge"), ttl: 60, data: Self.txt),
            .init(name: Self.host, ttl: 60, data: .a([100, 64, 77, 1])),
            .init(name: Self.host, ttl: 60, data: .aaaa([0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0] + [UInt8](repeating: 0, count: 9) + [1])),
        ]
        let bridges = try await WideAreaBrowser.bridges(in: Self.zone) { name, type in zone.lookup(name, type) }
        #expect(
            bridges == [
                DiscoveredBridge(
                    name: "Kitchen bridge.lanbridge.test", host: "kitchen.lanbridge.test", addresses: ["100.64.77.1", "fd7a:115c:a1e0::1"],
                    port: 18790, advertisement: BridgeAdvertisement(txt: ["txtvers=1", "pv=1-1", "id=CD66-7ZZ3", "name=Kitchen"]))
            ])
    }

    @Test func aZoneListingManyInstancesIsReadOnlyAsFarAsTheCap() async throws {
        let zone = Zone()
        for n in 0..<50 {
            zone.records.append(.init(name: Self.service, ttl: 60, data: .ptr(Self.instance("b\(n)"))))
            zone.records.append(.init(name: Self.instance("b\(n)"), ttl: 60, data: .srv(priority: 0, weight: 0, port: UInt16(n == 3 ? 0 : 1000 + n), target: Self.host)))
        }
        zone.records.append(.init(name: Self.host, ttl: 60, data: .a([10, 0, 0, 1])))
        let bridges = try await WideAreaBrowser.bridges(in: Self.zone) { name, type in zone.lookup(name, type) }
        #expect(bridges.count == WideAreaBrowser.maxInstances - 1, "eight read, the one with port 0 dropped")
        #expect(zone.asked.count <= 1 + WideAreaBrowser.maxInstances * 4)
    }

    /// A server that never answers ends the lookup with an error after its attempts, not a hang
    /// (a UDP port nobody listens on: nothing comes back).
    @Test func aSilentServerIsAnErrorNotAHang() async throws {
        let socket = try DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        defer { try? socket.close().wait() }
        let port = try #require(socket.localAddress?.port)  // bound, so nobody else gets it, and never read
        let resolver = UnicastResolver(nameservers: [ReachableAddress(host: "127.0.0.1", port: port)], attempts: 2, timeout: .milliseconds(100))
        await #expect(throws: UnicastResolver.NoAnswer.self) { try await resolver.lookup(Self.service, .ptr) }
    }

    @Test func whatAUserTypesIsCheckedWhole() throws {
        #expect(try WideAreaBrowser(domain: "lanbridge.test", resolver: "100.64.77.1").nameservers == [ReachableAddress(host: "100.64.77.1", port: 53)])
        #expect(try WideAreaBrowser(domain: "lanbridge.test", resolver: "[fd00::1]:5353").nameservers == [ReachableAddress(host: "fd00::1", port: 5353)])
        #expect(try WideAreaBrowser(domain: "lanbridge.test", resolver: nil).nameservers.isEmpty)
        #expect(throws: WideAreaBrowser.InvalidArgument.self) { try WideAreaBrowser(domain: "a..b", resolver: nil) }
        #expect(throws: WideAreaBrowser.InvalidArgument.self) { try WideAreaBrowser(domain: "lanbridge.test", resolver: "x y") }
    }

    @Test func nameServersComeFromResolvConf() {
        let conf = "# by NetworkManager\nsearch home.arpa\nnameserver 192.168.1.1\nnameserver fe80::1%eth0\nnameserver\toops!\noptions edns0\n"
        #expect(WideAreaBrowser.nameservers(resolvConf: conf) == [ReachableAddress(host: "192.168.1.1", port: 53), ReachableAddress(host: "fe80::1", port: 53)])
    }
}
