// BoringSSL as NIOSSL builds it (see CanvasCertificate.swift): the P-256 and X.509 code in the graph.
internal import CNIOBoringSSL
import FoundationEssentials
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol

/// The bridge's own certificate authority, for browser nodes (issue 64, tier 1): a page is
/// authentic only when the browser itself authenticates its origin, so the phone installs this
/// root once and trusts the bridge's name through it.
///
/// - The root and its one intermediate carry X.509 Name Constraints: they can vouch for the
///   bridge's names (`<name>.local`, and LAN IPv4 addresses as /32s) and nothing else, so a stolen
///   intermediate cannot impersonate any other site to the phone.
/// - The root's private key exists only inside `make`: it signs the intermediate and is gone. What
///   the state directory keeps is the root's certificate (`ca/root.crt`) and the intermediate's
///   key and certificate (`ca/intermediate.pem`, 0600), which issue the serving leaves.
/// - Leaves: P-256, the names as subjectAltName, EKU serverAuth, at most 825 days (Apple's limit
///   for a trusted TLS certificate), signed by the intermediate.
/// - Changing the names means a new root, so a new install on every phone.
enum BridgeCA {
    static let folder = "ca"
    static let rootFile = "ca/root.crt"
    static let intermediateFile = "ca/intermediate.pem"
    /// The names, as `ca init` was given them (the certificates carry them too, as constraints).
    static let namesFile = "ca/names.json"
    static let maxLeafDays = 825
    static let maxFileBytes = 16 << 10

    typealias Problem = BridgeCAFiles.Problem

    /// The names the CA may vouch for: DNS names (`bridge.local`) and IPv4 addresses.
    struct Names: Equatable, Sendable {
        var dns: [String]
        var ipv4: [String]

        init(dns: [String], ipv4: [String]) throws(Problem) {
            for name in dns {
                let labels = name.split(separator: ".", omittingEmptySubsequences: false)
                guard name.utf8.count <= 253, labels.count >= 2,
                    labels.allSatisfy({ (1...63).contains($0.utf8.count) && $0.utf8.allSatisfy { Self.isHostByte($0) } })
                else { throw Problem(.invalid, "\"\(SafeText.escape(name))\" is not a host name (letters, digits and hyphens, dot-separated)") }
            }
            for address in ipv4 {
                let parts = address.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil && ($0 == "0" || !$0.hasPrefix("0")) }) else {
                    throw Problem(.invalid, "\"\(SafeText.escape(address))\" is not an IPv4 address")
                }
            }
            guard !dns.isEmpty || !ipv4.isEmpty else { throw Problem(.invalid, "at least one --name or --ip") }
            (self.dns, self.ipv4) = (dns.map { $0.lowercased() }, ipv4)
        }

        private static func isHostByte(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
        }

        /// As OpenSSL's extension syntax writes them, `kind` being `DNS`/`IP` entries' prefix.
        fileprivate var constraints: String {
            (dns.map { "permitted;DNS:\($0)" } + ipv4.map { "permitted;IP:\($0)/255.255.255.255" }).joined(separator: ",")
        }
        fileprivate var subjectAltNames: String { (dns.map { "DNS:\($0)" } + ipv4.map { "IP:\($0)" }).joined(separator: ",") }
    }

    /// A new root and intermediate for `names`: the root's certificate and the intermediate's key
    /// and certificate, as PEM. The root's key is never written anywhere.
    static func make(names: Names, bridgeName: String) throws -> (root: [UInt8], intermediate: [UInt8]) {
        let rootKey = try Key()
        let root = try Certificate(
            subject: "lanbridge \(bridgeName) root", key: rootKey, issuer: nil, days: 20 * 365,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:1"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"), (NID_name_constraints, "critical,\(names.constraints)"),
            ])
        let intermediateKey = try Key()
        let intermediate = try Certificate(
            subject: "lanbridge \(bridgeName) intermediate", key: intermediateKey, issuer: (root, rootKey), days: 10 * 365,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always"),
                (NID_name_constraints, "critical,\(names.constraints)"),
            ])
        return (try root.pem(), try intermediateKey.pem() + intermediate.pem())
    }

    /// A serving leaf for `names`, signed by the intermediate (its key and certificate, PEM): the
    /// key, the leaf, then the intermediate, as a TLS server sends its chain.
    static func issueLeaf(names: Names, days: Int, intermediate pem: [UInt8]) throws -> [UInt8] {
        guard (1...maxLeafDays).contains(days) else { throw Problem(.invalid, "a leaf lives 1 to \(maxLeafDays) days") }
        let issuerKey = try Key(pem: pem)
        let issuer = try Certificate(pem: pem)
        let key = try Key()
        let leaf = try Certificate(
            subject: names.dns.first ?? names.ipv4[0], key: key, issuer: (issuer, issuerKey), days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, names.subjectAltNames),
                (NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always"),
            ])
        return try key.pem() + leaf.pem() + issuer.pem()
    }

    /// A self-signed serving certificate for `names` (the browser door's tier 3, a certificate the
    /// user clicks through): its key and certificate, PEM.
    static func selfSigned(names: Names, days: Int) throws -> [UInt8] {
        let key = try Key()
        let certificate = try Certificate(
            subject: names.dns.first ?? names.ipv4[0], key: key, issuer: nil, days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, names.subjectAltNames),
            ])
        return try key.pem() + certificate.pem()
    }

    /// Whether the private key in `keyPEM` belongs to the first certificate in `certificatePEM`
    /// (a renewed certificate beside a stale key is refused, and the pair served meanwhile kept).
    static func keyMatches(certificatePEM: [UInt8], keyPEM: [UInt8]) -> Bool {
        guard let certificate = try? Certificate(pem: certificatePEM), let key = try? Key(pem: keyPEM) else { return false }
        return X509_check_private_key(certificate.x509, key.pkey) == 1
    }

    static func der(ofCertificatePEM pem: [UInt8]) throws -> [UInt8] { try Certificate(pem: pem).der() }

    /// A certificate's subject common name.
    static func subject(ofCertificatePEM pem: [UInt8]) throws -> String {
        let certificate = try Certificate(pem: pem)
        guard let name = X509_get_subject_name(certificate.x509) else { return "lanbridge" }
        var buffer = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        return length > 0 ? String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "lanbridge"
    }

    /// SHA-256 of a PEM certificate's DER, upper-case hex in groups of four, as a phone's
    /// certificate screen shows it for comparison.
    static func fingerprint(ofCertificatePEM pem: [UInt8]) throws -> String {
        let hex = Hex.encode(SHA256.hash(try Certificate(pem: pem).der())).uppercased()
        return stride(from: 0, to: hex.count, by: 4).map { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return String(hex[start..<hex.index(start, offsetBy: 4)])
        }.joined(separator: " ")
    }

    // MARK: - BoringSSL, wrapped

    private final class Key {
        let pkey: OpaquePointer

        init() throws {
            guard let ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1) else { throw Problem(.failed, "no P-256") }
            guard let pkey = EVP_PKEY_new() else {
                EC_KEY_free(ec)
                throw Problem(.failed, "no memory")
            }
            guard EC_KEY_generate_key(ec) == 1, EVP_PKEY_assign_EC_KEY(pkey, ec) == 1 else {
                EC_KEY_free(ec)
                EVP_PKEY_free(pkey)
                throw Problem(.failed, "cannot make a P-256 key")
            }
            self.pkey = pkey
        }

        init(pem: [UInt8]) throws {
            guard let loaded = BridgeCA.read(pem, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else { throw Problem(.failed, "no private key in \(BridgeCA.intermediateFile)") }
            pkey = loaded
        }

        deinit { EVP_PKEY_free(pkey) }

        func pem() throws -> [UInt8] { try BridgeCA.pem { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) } }
    }

    private final class Certificate {
        let x509: OpaquePointer

        init(subject: String, key: Key, issuer: (Certificate, Key)?, days: Int, extensions: [(Int32, String)]) throws {
            guard let x509 = X509_new() else { throw Problem(.failed, "no memory") }
            self.x509 = x509
            func check(_ ok: Int32, _ what: String) throws { if ok != 1 { throw Problem(.failed, "cannot make the certificate: \(what)") } }
            try check(X509_set_version(x509, 2), "version")
            let serial = SecureRandom.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & 0x7FFF_FFFF_FFFF_FFFF
            try check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial), "serial")
            guard X509_gmtime_adj(X509_getm_notBefore(x509), -3600) != nil, X509_gmtime_adj(X509_getm_notAfter(x509), days * 86400) != nil else {
                throw Problem(.failed, "cannot set the validity")
            }
            guard let name = X509_get_subject_name(x509) else { throw Problem(.failed, "no subject") }
            try check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, subject, -1, -1, 0), "subject")
            try check(X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.0.x509) } ?? name), "issuer")
            try check(X509_set_pubkey(x509, key.pkey), "public key")
            var context = X509V3_CTX()
            X509V3_set_ctx(&context, issuer?.0.x509 ?? x509, x509, nil, nil, 0)
            for (nid, value) in extensions {
                guard let extensionValue = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                    throw Problem(.failed, "cannot make the certificate's extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
                }
                defer { X509_EXTENSION_free(extensionValue) }
                try check(X509_add_ext(x509, extensionValue, -1), "extension")
            }
            guard X509_sign(x509, (issuer?.1 ?? key).pkey, EVP_sha256()) > 0 else { throw Problem(.failed, "cannot sign") }
        }

        init(pem: [UInt8]) throws {
            guard let loaded = BridgeCA.read(pem, { PEM_read_bio_X509($0, nil, nil, nil) }) else { throw Problem(.failed, "no certificate in the PEM") }
            x509 = loaded
        }

        deinit { X509_free(x509) }

        func pem() throws -> [UInt8] { try BridgeCA.pem { PEM_write_bio_X509($0, x509) } }

        func der() throws -> [UInt8] {
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_X509(x509, &out)
            guard length > 0, let out else { throw Problem(.failed, "cannot encode the certificate") }
            defer { OPENSSL_free(out) }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }

    /// The first object `read` finds in `pem`.
    private static func read(_ pem: [UInt8], _ read: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw Problem(.failed, "no memory") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw Problem(.failed, "cannot write PEM") }
        var contents: UnsafePointer<UInt8>?
        var length = 0
        guard BIO_mem_contents(bio, &contents, &length) == 1, let contents else { throw Problem(.failed, "empty PEM") }
        return Array(UnsafeBufferPointer(start: contents, count: length))
    }
}

/// The CA's files, for the CLI (`lanbridge ca`): made, shown, and a leaf issued.
public enum BridgeCAFiles {
    public struct Problem: Error, CustomStringConvertible {
        public enum Kind: Sendable { case invalid, exists, missing, failed }
        public let kind: Kind
        public let description: String
        public init(_ kind: Kind, _ description: String) { (self.kind, self.description) = (kind, description) }
    }

    public struct Summary: Codable, Sendable {
        /// SHA-256 of the root certificate, in groups of four, as the phone's screen shows it.
        public var rootSha256: String
        public var rootFile: String
        public var names: [String]
    }

    /// Makes the root and intermediate for `dns` and `ipv4` (refused when a CA exists, unless `replace`).
    public static func initialize(directory: StateDirectory, dns: [String], ipv4: [String], bridgeName: String, replace: Bool) throws -> Summary {
        let names = try BridgeCA.Names(dns: dns, ipv4: ipv4)
        let root = directory.file(BridgeCA.rootFile)
        if !replace, FileManager.default.fileExists(atPath: root.path) {
            throw BridgeCA.Problem(
                .exists, "a CA exists (\(root.path)); --replace makes a new one, and every phone that trusts the old root must install the new one")
        }
        try directory.prepare()
        try StateSharing.folder(directory.file(BridgeCA.folder), in: directory.url)
        let made = try BridgeCA.make(names: names, bridgeName: bridgeName)
        // The intermediate first: a root on disk always has its intermediate beside it.
        try AtomicFile.write(made.intermediate, to: directory.file(BridgeCA.intermediateFile), mode: 0o600)
        try AtomicFile.write(try StateJSON.encode(names.dns + names.ipv4), to: directory.file(BridgeCA.namesFile), mode: 0o644)
        try AtomicFile.write(made.root, to: root, mode: 0o644)
        return Summary(rootSha256: try BridgeCA.fingerprint(ofCertificatePEM: made.root), rootFile: root.path, names: names.dns + names.ipv4)
    }

    /// The CA as kept, or nil when there is none.
    public static func show(directory: StateDirectory) throws -> Summary? {
        let root = directory.file(BridgeCA.rootFile)
        guard let pem = FileManager.default.contents(atPath: root.path) else { return nil }
        let names = FileManager.default.contents(atPath: directory.file(BridgeCA.namesFile).path).flatMap { try? LanbridgeJSON.decoder.decode([String].self, from: $0) }
        return Summary(rootSha256: try BridgeCA.fingerprint(ofCertificatePEM: Array(pem)), rootFile: root.path, names: names ?? [])
    }

    /// The root as a phone installs it: DER (`.crt`, Android and most browsers) and an unsigned
    /// configuration profile (`.mobileconfig`, iOS and macOS) carrying the same certificate. Its
    /// identifiers derive from the root's hash, so a second download is the same profile.
    public struct Downloads: Sendable {
        public let crt: [UInt8]
        public let mobileconfig: [UInt8]
        public let rootSha256: String
    }

    public static func downloads(directory: StateDirectory) throws -> Downloads? {
        guard let pem = FileManager.default.contents(atPath: directory.file(BridgeCA.rootFile).path).map(Array.init) else { return nil }
        let der = try BridgeCA.der(ofCertificatePEM: pem)
        let hash = Hex.encode(SHA256.hash(der))
        func uuid(_ salt: String) -> String {
            let h = Hex.encode(SHA256.hash(Array((salt + hash).utf8))).uppercased()
            let c = Array(h)
            return [String(c[0..<8]), String(c[8..<12]), "4" + String(c[13..<16]), "8" + String(c[17..<20]), String(c[20..<32])].joined(separator: "-")
        }
        let name = try BridgeCA.subject(ofCertificatePEM: pem)
        let escaped = HTML.escape(name)
        let base64 = Data(der).base64EncodedString()
        let profile = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            <key>PayloadContent</key>
            <array>
            <dict>
            <key>PayloadCertificateFileName</key><string>lanbridge-root.crt</string>
            <key>PayloadContent</key><data>\(base64)</data>
            <key>PayloadDescription</key><string>Lets this device trust the bridge's own pages, and only the names it was made for.</string>
            <key>PayloadDisplayName</key><string>\(escaped)</string>
            <key>PayloadIdentifier</key><string>dev.lanbridge.root.\(hash.prefix(16))</string>
            <key>PayloadType</key><string>com.apple.security.root</string>
            <key>PayloadUUID</key><string>\(uuid("payload"))</string>
            <key>PayloadVersion</key><integer>1</integer>
            </dict>
            </array>
            <key>PayloadDisplayName</key><string>\(escaped)</string>
            <key>PayloadIdentifier</key><string>dev.lanbridge.profile.\(hash.prefix(16))</string>
            <key>PayloadRemovalDisallowed</key><false/>
            <key>PayloadType</key><string>Configuration</string>
            <key>PayloadUUID</key><string>\(uuid("profile"))</string>
            <key>PayloadVersion</key><integer>1</integer>
            </dict>
            </plist>

            """
        return Downloads(crt: der, mobileconfig: Array(profile.utf8), rootSha256: try BridgeCA.fingerprint(ofCertificatePEM: pem))
    }

    /// A serving leaf (its key, the leaf and the intermediate, PEM) for names the CA covers.
    public static func issueLeaf(directory: StateDirectory, dns: [String], ipv4: [String], days: Int) throws -> [UInt8] {
        let names = try BridgeCA.Names(dns: dns, ipv4: ipv4)
        guard let intermediate = try SecretFile.read(directory.file(BridgeCA.intermediateFile), maxLength: BridgeCA.maxFileBytes) else {
            throw BridgeCA.Problem(.missing, "no CA in \(directory.url.path) (lanbridge ca init makes one)")
        }
        return try BridgeCA.issueLeaf(names: names, days: days, intermediate: intermediate.withUnsafeBytes { Array($0) })
    }
}
