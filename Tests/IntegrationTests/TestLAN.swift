import Foundation
import TestSupport

/// An isolated test LAN: a "bridge host" and a "phone host" network namespace joined by a veth
/// pair, with avahi-daemon serving only the bridge host's veth. Nothing multicasts on the
/// machine's real interfaces. Everything it starts it stops, and the namespaces are deleted.
final class TestLAN: @unchecked Sendable {
    static let bridgeAddress = "10.77.0.1"
    static let phoneAddress = "10.77.0.2"

    let host: String
    let phone: String
    private let config: TemporaryDirectory
    private(set) var avahi: ChildProcess?

    /// Why the test LAN cannot be built here, or nil when it can.
    static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "network namespaces need root (CI runs as root)" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/avahi-daemon") else { return "avahi-daemon is not installed (scripts/setup installs it)" }
        guard systemBusAnswers() else { return "no D-Bus system bus answers (scripts/test starts one)" }
        if let pid = try? String(contentsOfFile: "/run/avahi-daemon/pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            let number = Int32(pid), kill(number, 0) == 0
        {
            return "an avahi-daemon already runs on this machine (pid \(number)); only one can, and these tests leave it alone"
        }
        guard Python.hasModule("zeroconf") else { return "needs Python's zeroconf (scripts/setup installs it)" }
        return nil
    }()

    private static func systemBusAnswers() -> Bool {
        ChildProcess.exitStatus(
            "/usr/bin/dbus-send",
            [
                "--system", "--dest=org.freedesktop.DBus", "--type=method_call",
                "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames",
            ]) == 0
    }

    init() throws {
        // Unique per run and per LAN: the pid, and a random suffix.
        let tag = "\(getpid() % 100000)x\(UInt16.random(in: 0...UInt16.max))"
        host = "lb_h\(tag)"
        phone = "lb_p\(tag)"
        config = TemporaryDirectory("avahi")
        try Self.ip(["netns", "add", host])
        try Self.ip(["netns", "add", phone])
        try Self.ip(["link", "add", "vb", "netns", host, "type", "veth", "peer", "name", "vp", "netns", phone])
        try Self.ip(["-n", host, "addr", "add", "\(Self.bridgeAddress)/24", "dev", "vb"])
        try Self.ip(["-n", phone, "addr", "add", "\(Self.phoneAddress)/24", "dev", "vp"])
        for (ns, dev) in [(host, "vb"), (phone, "vp"), (host, "lo"), (phone, "lo")] {
            try Self.ip(["-n", ns, "link", "set", dev, "up"])
        }
        try """
        [server]
        allow-interfaces=vb
        use-ipv4=yes
        use-ipv6=no
        enable-dbus=yes
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-workstation=no
        publish-hinfo=no
        """.write(to: config.file("avahi-daemon.conf"), atomically: true, encoding: .utf8)
    }

    /// `ip netns exec NAMESPACE` as a launcher prefix for `BridgeDaemon` and `SimulatedNode`.
    func launcher(_ namespace: String) -> [String] { ["/usr/sbin/ip", "netns", "exec", namespace] }

    private(set) var avahiPID: Int32?

    func startAvahi() throws {
        // avahi-daemon closes every descriptor it inherits, including the socket Foundation's Process
        // watches to learn that a child exited; Foundation then blocks in wait4() on the live daemon
        // and stops reaping every other child. A shell in between keeps that socket open. The shell
        // inherits the test runner's blocked signal mask, so avahi-daemon is signalled directly.
        let script =
            "ip netns exec \"$0\" /usr/sbin/avahi-daemon -f \"$1\" --no-drop-root --no-chroot --no-rlimits & "
            + "echo \"avahi-pid $!\"; wait $!"
        let daemon = try ChildProcess(
            URL(fileURLWithPath: "/bin/bash"), ["-c", script, host, config.file("avahi-daemon.conf").path],
            mergeStandardError: true)
        avahi = daemon
        avahiPID = Int32(try daemon.waitForLine(timeout: 30) { $0.hasPrefix("avahi-pid ") }.dropFirst("avahi-pid ".count))
        _ = try daemon.waitForLine(timeout: 30) { $0.contains("Server startup complete") }
    }

    func stopAvahi() {
        if let avahiPID { kill(avahiPID, SIGTERM) }
        avahi?.wait()
        avahi = nil
        avahiPID = nil
    }

    /// A Python zeroconf browser (an independent mDNS stack) on the phone host, for `type`.
    func browser(type: String = "_lanbridge._tcp") throws -> ChildProcess {
        try ChildProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            [
                "netns", "exec", phone, "env", "MDNS_TYPE=\(type)", Python.executable,
                Repository.url("Tests/IntegrationTests/python/mdns_peer.py").path, "browse", Self.phoneAddress,
            ],
            mergeStandardError: true, standardInput: true)
    }

    /// Registers a service of our type under `name` from the phone host, as another machine would.
    func competitor(named name: String) throws -> ChildProcess {
        try ChildProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            [
                "netns", "exec", phone, Python.executable, Repository.url("Tests/IntegrationTests/python/mdns_peer.py").path,
                "publish", Self.phoneAddress, name,
            ], mergeStandardError: true, standardInput: true)
    }

    // MARK: - A second way in: the tailnet

    static let tailnetBridgeAddress = "100.64.77.1"
    static let tailnetPhoneAddress = "100.64.77.2"
    private var parking: String { host.replacingOccurrences(of: "lb_h", with: "lb_a") }
    private var tailnetAdded = false

    /// A second link from the bridge host, in Tailscale's address range, whose far end waits in
    /// a third namespace until the phone moves onto it.
    func addTailnet() throws {
        try Self.ip(["netns", "add", parking])
        tailnetAdded = true
        try Self.ip(["link", "add", "vt", "netns", host, "type", "veth", "peer", "name", "vq", "netns", parking])
        try Self.ip(["-n", host, "addr", "add", "\(Self.tailnetBridgeAddress)/24", "dev", "vt"])
        try Self.ip(["-n", host, "link", "set", "vt", "up"])
    }

    /// The phone leaves the LAN for the tailnet: its LAN link goes to the parking namespace, the
    /// tailnet link comes in. The LAN's addresses then lead nowhere: their packets wait for a
    /// next hop that never answers ARP, as SYNs to a Wi-Fi the phone has left do (no quick refusal).
    func movePhoneToTailnet() throws {
        try Self.ip(["-n", phone, "link", "set", "vp", "netns", parking])
        try Self.ip(["-n", parking, "link", "set", "vq", "netns", phone])
        try Self.ip(["-n", phone, "addr", "add", "\(Self.tailnetPhoneAddress)/24", "dev", "vq"])
        try Self.ip(["-n", phone, "link", "set", "vq", "up"])
        try Self.ip(["-n", phone, "route", "add", "10.77.0.0/24", "via", "100.64.77.99", "dev", "vq"])
    }

    // MARK: - A unicast DNS server on the bridge host

    private var dns: ChildProcess?
    private var dnsPID: Int32?

    /// dnsmasq (Debian's, `dnsmasq-base`) on the bridge host with `options`, answering only what
    /// they define. Like avahi-daemon it closes what it inherits, so a shell stands in between.
    func startDNS(_ options: [String]) throws {
        let script = "ip netns exec \"$0\" /usr/sbin/dnsmasq \"$@\" & echo \"dns-pid $!\"; wait $!"
        let pidFile = config.file("dnsmasq.pid").path
        let daemon = try ChildProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [
                "-c", script, host, "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--bind-interfaces",
                "--user=root", "--pid-file=\(pidFile)", "--log-facility=-", "--log-queries",
            ] + options,
            mergeStandardError: true)
        dns = daemon
        dnsPID = Int32(try daemon.waitForLine(timeout: 30) { $0.hasPrefix("dns-pid ") }.dropFirst("dns-pid ".count))
        _ = try daemon.waitForLine(timeout: 30) { $0.contains("started, version") }
    }

    /// What dnsmasq logged (its queries among it).
    var dnsLog: String { dns?.output.joined(separator: "\n") ?? "" }

    func stopDNS() {
        if let dnsPID { kill(dnsPID, SIGKILL) }  // it inherits the test runner's blocked SIGTERM
        dns?.wait()
        (dns, dnsPID) = (nil, nil)
    }

    func tearDown() {
        stopAvahi()
        stopDNS()
        try? Self.ip(["netns", "del", host])
        try? Self.ip(["netns", "del", phone])
        if tailnetAdded { try? Self.ip(["netns", "del", parking]) }
    }

    deinit { tearDown() }

    struct CommandFailed: Error { let command: String }

    private static func ip(_ arguments: [String]) throws {
        guard ChildProcess.exitStatus("/usr/sbin/ip", arguments) == 0 else { throw CommandFailed(command: "ip " + arguments.joined(separator: " ")) }
    }
}
