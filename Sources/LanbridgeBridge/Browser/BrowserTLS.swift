import FoundationEssentials
import LanbridgeFiles
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The browser door's certificate (issue 64, tier 1): a short-lived leaf the daemon issues itself
/// from the bridge CA's intermediate (`lanbridge ca init`), for every name the CA covers. Its key
/// lives in this process only, never on disk; a new leaf replaces it before a third of its life is
/// left, and each TLS handshake takes the current one. The relay's `canvas-tls.pem` (no SAN, no
/// EKU, ten years) is never served here.
final class BrowserTLS: Sendable {
    /// A leaf's lifetime, far inside the 825 days Apple's devices accept.
    static let leafDays = 30
    /// A new leaf is issued once this much of the current one's life has passed (monotonic).
    static let renewAfter = TimeAmount.hours(24 * 20)

    struct Served: Sendable {
        let context: NIOSSLContext
        let issued: NIODeadline
    }

    let names: [String]
    private let directory: StateDirectory
    private let current: NIOLockedValueBox<Served>

    init(directory: StateDirectory) throws {
        self.directory = directory
        guard let summary = try BridgeCAFiles.show(directory: directory) else {
            throw BridgeCA.Problem(.missing, "the browser door needs the bridge CA: `lanbridge ca init --name NAME.local` makes it")
        }
        guard !summary.names.isEmpty else { throw BridgeCA.Problem(.invalid, "\(BridgeCA.namesFile) names nothing; make the CA again") }
        names = summary.names
        current = NIOLockedValueBox(try Self.issue(names: summary.names, directory: directory))
    }

    var served: Served { current.withLockedValue { $0 } }

    /// A new leaf if the current one is due; called on a timer.
    func renewIfDue(now: NIODeadline = .now()) throws {
        guard now - served.issued >= Self.renewAfter else { return }
        let next = try Self.issue(names: names, directory: directory)
        current.withLockedValue { $0 = next }
    }

    private static func issue(names: [String], directory: StateDirectory) throws -> Served {
        let isIPv4 = { (name: String) in name.utf8.allSatisfy { $0 == UInt8(ascii: ".") || (0x30...0x39).contains($0) } }
        let pem = try BridgeCAFiles.issueLeaf(directory: directory, dns: names.filter { !isIPv4($0) }, ipv4: names.filter(isIPv4), days: leafDays)
        let key = try NIOSSLPrivateKey(bytes: pem, format: .pem)
        let chain = try NIOSSLCertificate.fromPEMBytes(pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["http/1.1"]
        tls.shutdownTimeout = .zero  // as DoorTLS: a closed connection's descriptor is free at once
        return Served(context: try NIOSSLContext(configuration: tls), issued: .now())
    }
}
