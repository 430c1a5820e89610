import LanbridgeProtocol
import FoundationEssentials
import LanbridgeDiscovery
import LanbridgeFiles
import LanbridgeState
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The browser door's certificate (issue 64), by tier:
///
/// 1. **The bridge CA** (the default): a short-lived leaf the daemon issues itself from the
///    intermediate of `lanbridge ca init`, for every name the CA covers. Its key lives in this
///    process only, never on disk; a new leaf replaces it once two thirds of its life are gone.
/// 2. **The admin's certificate** (`browser.tls.certFile`/`keyFile`: certbot DNS-01, `tailscale
///    cert`, Caddy): read again when either file changes; a pair whose key is not the
///    certificate's is refused and the pair served meanwhile kept.
/// 3. **Self-signed** (`browser.tls: "self-signed"`): made once and kept (`browser-self-signed.pem`),
///    clicked through by the user; its pairings are `browser-unverified`.
///
/// Each TLS handshake takes the current one. The relay's `canvas-tls.pem` (no SAN, no EKU, ten
/// years) is never served here.
final class BrowserTLS: Sendable {
    /// A leaf's lifetime, far inside the 825 days Apple's devices accept.
    static let leafDays = 30
    /// A new leaf is issued once this much of the current one's life has passed (monotonic).
    static let renewAfter = TimeAmount.hours(24 * 20)
    static let selfSignedFile = "browser-self-signed.pem"
    static let selfSignedDays = 825

    struct Served: Sendable {
        let context: NIOSSLContext
        /// What the context serves, for the canvas relay's answer to the door's names.
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        let issued: NIODeadline
        /// The files' identities when read (tier 2), to see them change.
        let stamp: [String]
    }

    let source: BridgeSettings.Browser.TLS
    /// What a pairing through this door is worth.
    var tier: BrowserTier { source == .selfSigned ? .unverified : .verified }
    /// The names `Host` may give (an entry `*.example.com` covers one label), and the first, the page's.
    let names: [String]
    /// How often `refresh` has anything to look at.
    var refreshEvery: TimeAmount? {
        switch source {
        case .bridgeCA: .hours(1)
        case .files: .seconds(5)
        case .selfSigned: nil
        }
    }

    private let directory: StateDirectory
    private let current: NIOLockedValueBox<Served>

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    init(source: BridgeSettings.Browser.TLS, names configured: [String], directory: StateDirectory) throws {
        (self.source, self.directory) = (source, directory)
        switch source {
        case .bridgeCA:
            guard let summary = try BridgeCAFiles.show(directory: directory) else {
                throw BridgeCA.Problem(.missing, "the browser door needs the bridge CA: `lanbridge ca init --name NAME.local` makes it")
            }
            guard !summary.names.isEmpty else { throw BridgeCA.Problem(.invalid, "\(BridgeCA.namesFile) names nothing; make the CA again") }
            names = summary.names
            current = NIOLockedValueBox(try Self.issue(names: summary.names, directory: directory))
        case let .files(certificate, key):
            let served = try Self.read(certificate: certificate, key: key)
            names = configured.isEmpty ? served.names : configured
            guard names.contains(where: { !$0.hasPrefix("*.") }) else {
                throw Problem(description: "\(certificate) names no single host (no subjectAltName, or only wildcards); give browser.names")
            }
            current = NIOLockedValueBox(served.served)
        case .selfSigned:
            names = configured.isEmpty ? Self.localNames() : configured
            current = NIOLockedValueBox(try Self.selfSigned(names: names, directory: directory))
        }
    }

    var served: Served { current.withLockedValue { $0 } }

    /// A new leaf if the current one is due (tier 1), the admin's files again if they changed
    /// (tier 2). A failure keeps what is served and throws, for the log.
    func refresh(now: NIODeadline = .now()) throws {
        switch source {
        case .bridgeCA:
            guard now - served.issued >= Self.renewAfter else { return }
            let next = try Self.issue(names: names, directory: directory)
            current.withLockedValue { $0 = next }
        case let .files(certificate, key):
            guard Self.stamp([certificate, key]) != served.stamp else { return }
            let next = try Self.read(certificate: certificate, key: key)
            current.withLockedValue { $0 = next.served }
        case .selfSigned:
            return
        }
    }

    private static func served(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey, stamp: [String]) throws -> Served {
        Served(context: try context(chain: chain, key: key), chain: chain, key: key, issued: .now(), stamp: stamp)
    }

    /// Whether `name` (a TLS client's SNI, or a `Host`) is one of the door's: exactly, or one label
    /// under a `*.` name.
    func covers(_ name: String) -> Bool { BrowserRequestCheck.covers(name.lowercased(), names: Set(names)) }

    private static func context(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["http/1.1"]
        tls.shutdownTimeout = .zero  // as DoorTLS: a closed connection's descriptor is free at once
        return try NIOSSLContext(configuration: tls)
    }

    private static func issue(names: [String], directory: StateDirectory) throws -> Served {
        let (dns, ipv4) = split(names)
        let pem = try BridgeCAFiles.issueLeaf(directory: directory, dns: dns, ipv4: ipv4, days: leafDays)
        return try served(chain: try NIOSSLCertificate.fromPEMBytes(pem), key: try NIOSSLPrivateKey(bytes: pem, format: .pem), stamp: [])
    }

    private static func read(certificate: String, key: String) throws -> (served: Served, names: [String]) {
        let stamp = Self.stamp([certificate, key])
        guard let certificatePEM = FileManager.default.contents(atPath: certificate).map(Array.init),
            let keyPEM = try SecretFile.read(URL(fileURLWithPath: key), maxLength: 64 << 10)?.withUnsafeBytes({ Array($0) })
        else { throw Problem(description: "cannot read \(certificate) and \(key)") }
        guard BridgeCA.keyMatches(certificatePEM: certificatePEM, keyPEM: keyPEM) else {
            throw Problem(description: "the key in \(key) is not the one \(certificate) certifies (renewed one without the other?)")
        }
        let chain = try NIOSSLCertificate.fromPEMBytes(certificatePEM)
        return (try served(chain: chain, key: try NIOSSLPrivateKey(bytes: keyPEM, format: .pem), stamp: stamp), chain.first.map(subjectAltNames) ?? [])
    }

    private static func selfSigned(names: [String], directory: StateDirectory) throws -> Served {
        let file = directory.file(selfSignedFile)
        if let kept = try SecretFile.read(file, maxLength: 64 << 10)?.withUnsafeBytes({ Array($0) }),
            let chain = try? NIOSSLCertificate.fromPEMBytes(kept), let leaf = chain.first, Set(subjectAltNames(leaf)) == Set(names.map { $0.lowercased() }),
            let key = try? NIOSSLPrivateKey(bytes: kept, format: .pem)
        {
            return try served(chain: chain, key: key, stamp: [])
        }
        let (dns, ipv4) = split(names)
        let pem = try BridgeCA.selfSigned(names: try BridgeCA.Names(dns: dns, ipv4: ipv4), days: selfSignedDays)
        try AtomicFile.write(pem, to: file, mode: 0o600)
        return try served(chain: try NIOSSLCertificate.fromPEMBytes(pem), key: try NIOSSLPrivateKey(bytes: pem, format: .pem), stamp: [])
    }

    /// The DNS names and IPv4 addresses a certificate names, lowercased.
    static func subjectAltNames(_ certificate: NIOSSLCertificate) -> [String] {
        certificate._subjectAlternativeNames().compactMap { name in
            switch name.nameType {
            case .dnsName: return name.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self).lowercased() }
            case .ipAddress where name.contents.count == 4: return name.contents.map(String.init).joined(separator: ".")
            default: return nil
            }
        }
    }

    /// `HOST.local` and this machine's LAN IPv4 addresses: what a self-signed page answers to by default.
    private static func localNames() -> [String] {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map { "\($0.lowercased()).local" }
        let addresses = NetworkInterfaces.addresses().filter { $0.isIPv4 && $0.isUp && !$0.isLoopback }.map(\.address)
        return (host.map { [$0] } ?? []) + addresses
    }

    private static func split(_ names: [String]) -> (dns: [String], ipv4: [String]) {
        let isIPv4 = { (name: String) in name.utf8.allSatisfy { $0 == UInt8(ascii: ".") || (0x30...0x39).contains($0) } }
        return (names.filter { !isIPv4($0) }, names.filter(isIPv4))
    }

    /// Inode, size and modification time of each file: what changes when certbot or Caddy renews.
    private static func stamp(_ paths: [String]) -> [String] {
        paths.map { path in
            guard let a = try? FileManager.default.attributesOfItem(atPath: path) else { return "missing" }
            return "\(a[.systemFileNumber] ?? 0)/\(a[.size] ?? 0)/\((a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        }
    }
}
