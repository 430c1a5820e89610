// BoringSSL as NIOSSL builds it: swift-nio-ssl offers no product for it, so it cannot be declared
// in Package.swift; it is the only P-256 and X.509 code in the graph, and this file its only user.
internal import CNIOBoringSSL
import FoundationEssentials
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
import NIOSSL

/// The canvas relay's TLS identity: a P-256 key and a self-signed certificate, made once and kept
/// in the state directory (`canvas-tls.pem`, 0600) so its fingerprint is stable across restarts.
/// Nodes learn the fingerprint inside their Noise session (`welcome.canvas.tlsSha256`) and pin
/// it: no certificate authority and no trust-on-first-use prompt is involved.
struct CanvasCertificate {
    static let fileName = "canvas-tls.pem"
    static let maxFileBytes = 16 << 10

    let certificate: NIOSSLCertificate
    let key: NIOSSLPrivateKey
    /// SHA-256 of the certificate's DER, lowercase hex (what `welcome.canvas.tlsSha256` carries).
    let sha256: String
    /// SHA-256 of the SubjectPublicKeyInfo, base64 (Chromium's `--ignore-certificate-errors-spki-list`).
    let spkiSha256Base64: String

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// Loads the kept certificate, or makes and keeps one when there is none.
    static func loadOrCreate(directory: StateDirectory) throws -> CanvasCertificate {
        let url = directory.file(fileName)
        if let pem = try SecretFile.read(url, maxLength: maxFileBytes) {
            return try CanvasCertificate(pem: pem.withUnsafeBytes { Array($0) })
        }
        let pem = try generatePEM()
        // Another process may have won the race: then its file is the one.
        if try !AtomicFile.create(pem, at: url, mode: 0o600) {
            guard let kept = try SecretFile.read(url, maxLength: maxFileBytes) else { throw Problem(description: "\(url.path) vanished") }
            return try CanvasCertificate(pem: kept.withUnsafeBytes { Array($0) })
        }
        return try CanvasCertificate(pem: pem)
    }

    /// `lanbridge canvas rotate-cert`: a new key and certificate replace the kept ones.
    static func rotate(directory: StateDirectory) throws -> CanvasCertificate {
        let pem = try generatePEM()
        try AtomicFile.write(pem, to: directory.file(fileName), mode: 0o600)
        return try CanvasCertificate(pem: pem)
    }

    init(pem: [UInt8]) throws {
        do {
            key = try NIOSSLPrivateKey(bytes: pem, format: .pem)
            guard let first = try NIOSSLCertificate.fromPEMBytes(pem).first else { throw Problem(description: "no certificate in \(Self.fileName)") }
            certificate = first
            sha256 = Hex.encode(SHA256.hash(try certificate.toDERBytes()))
            spkiSha256Base64 = Data(SHA256.hash(try certificate.extractPublicKey().toSPKIBytes())).base64EncodedString()
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(description: "\(Self.fileName) is unreadable (\(error)); `lanbridge canvas rotate-cert` makes a new one")
        }
    }

    /// A fresh key and a self-signed certificate for it (10 years: the pin, not the dates, is
    /// what a node checks), as PEM: the key, then the certificate.
    static func generatePEM() throws -> [UInt8] {
        func check(_ ok: Int32, _ what: String) throws { if ok != 1 { throw Problem(description: "cannot make the canvas certificate: \(what)") } }
        guard let ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1) else { throw Problem(description: "no P-256") }
        guard let pkey = EVP_PKEY_new() else { EC_KEY_free(ec); throw Problem(description: "no memory") }
        defer { EVP_PKEY_free(pkey) }
        guard EC_KEY_generate_key(ec) == 1, EVP_PKEY_assign_EC_KEY(pkey, ec) == 1 else {
            EC_KEY_free(ec)
            throw Problem(description: "cannot make a P-256 key")
        }
        guard let x509 = X509_new() else { throw Problem(description: "no memory") }
        defer { X509_free(x509) }
        try check(X509_set_version(x509, 2), "version")
        // A random 64-bit serial: two rotated certificates never share one.
        let serial = SecureRandom.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & 0x7FFF_FFFF_FFFF_FFFF
        try check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial), "serial")
        guard X509_gmtime_adj(X509_getm_notBefore(x509), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(x509), 10 * 365 * 86400) != nil
        else {
            throw Problem(description: "cannot set the validity")
        }
        guard let name = X509_get_subject_name(x509) else { throw Problem(description: "no subject") }
        try check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "lanbridge canvas relay", -1, -1, 0), "subject")
        try check(X509_set_issuer_name(x509, name), "issuer")
        try check(X509_set_pubkey(x509, pkey), "public key")
        guard X509_sign(x509, pkey, EVP_sha256()) > 0 else { throw Problem(description: "cannot sign") }

        guard let bio = BIO_new(BIO_s_mem()) else { throw Problem(description: "no memory") }
        defer { BIO_free(bio) }
        try check(PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil), "writing the key")
        try check(PEM_write_bio_X509(bio, x509), "writing the certificate")
        var contents: UnsafePointer<UInt8>?
        var length = 0
        try check(BIO_mem_contents(bio, &contents, &length), "reading the PEM")
        guard let contents else { throw Problem(description: "empty PEM") }
        return Array(UnsafeBufferPointer(start: contents, count: length))
    }
}

/// The certificate file for the CLI (`lanbridge canvas rotate-cert` without a daemon).
public enum CanvasCertificateFile {
    /// Replaces the kept key and certificate; returns the new certificate's SHA-256 (hex).
    public static func rotate(directory: StateDirectory) throws -> String {
        try CanvasCertificate.rotate(directory: directory).sha256
    }
}
