#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The long-term X25519 key pair of a bridge or a node, in `identity.key` (mode 0600).
///
/// File format: the 4 bytes "LBK1", then the 32-byte private key; nothing else. The bytes go
/// straight from read(2) into wiped memory, and the file is refused if others could read it.
/// Beside it, `identity.pub` (the public key in base64, a line) lets members of a shared state
/// directory's group, who cannot read the key, show and hand out the bridge's identity.
public struct IdentityStore: Sendable {
    public static let fileName = "identity.key"
    public static let publicFileName = "identity.pub"
    static let magic = Array("LBK1".utf8)
    static let fileLength = 4 + X25519.keyLength

    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// A member of a shared state directory's group who is not the key's owner.
    public struct KeyNotReadable: Error, CustomStringConvertible {
        public let url: URL
        public var description: String {
            "\(url.path) is not readable by you and \(url.deletingLastPathComponent().appendingPathComponent(IdentityStore.publicFileName).path) is missing or damaged; start the service (it writes identity.pub) or run this as the key's owner (sudo)"
        }
    }

    public struct NoIdentityYet: Error, CustomStringConvertible {
        public let url: URL
        public var description: String {
            "no bridge identity yet in \(url.deletingLastPathComponent().path): the daemon creates it when it first starts (sudo systemctl start lanbridge), or run this as the directory's owner"
        }
    }

    private var publicURL: URL { url.deletingLastPathComponent().appendingPathComponent(Self.publicFileName) }

    /// The public key, for commands that only show or hand it out (`identity`, `invite`): from the
    /// key pair when it can be read (creating it if `creating`), else from identity.pub. Creating
    /// is left to the directory's owner (or root), so the key is always one the daemon can read.
    public func publicKey(creating: Bool) throws -> [UInt8] {
        let directory = url.deletingLastPathComponent()
        var info = stat()
        let exists = lstat(url.path, &info) == 0
        if exists, access(url.path, R_OK) != 0, errno == EACCES {
            guard let text = try? String(contentsOf: publicURL, encoding: .utf8),
                let key = PublicKey(base64: text.trimmingWhitespaceAndNewlines())
            else { throw KeyNotReadable(url: url) }
            return key.bytes
        }
        if !exists {
            var dir = stat()
            let ours = stat(directory.path, &dir) != 0 || dir.st_uid == geteuid() || geteuid() == 0
            guard creating, ours else { throw NoIdentityYet(url: url) }
        }
        guard creating else {
            guard let pair = try load() else { throw NoIdentityYet(url: url) }
            return pair.publicKey
        }
        return try loadOrCreate().publicKey
    }

    /// Loads the key pair, creating it on first use. Safe when two processes race to create it.
    public func loadOrCreate() throws -> X25519.KeyPair {
        let pair = try loadOrCreatePrivate()
        try publish(pair.publicKey)
        return pair
    }

    /// Keeps identity.pub in step with the key (the key is the truth; identity.pub only a copy).
    private func publish(_ publicKey: [UInt8]) throws {
        guard let key = PublicKey(bytes: publicKey) else { return }
        let line = Array((key.base64 + "\n").utf8)
        if (try? Data(contentsOf: publicURL)) == Data(line) { return }
        try AtomicFile.write(line, to: publicURL)
    }

    private func loadOrCreatePrivate() throws -> X25519.KeyPair {
        if let existing = try load() { return existing }
        try StateDirectory(url: url.deletingLastPathComponent()).prepare()
        let fresh = X25519.KeyPair.generate()
        let contents = SecureBytes(count: Self.fileLength) { out in
            out.copyBytes(from: Self.magic)
            fresh.privateKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[Self.magic.count...]).copyMemory(from: $0) }
        }
        if try AtomicFile.create(contents, at: url, mode: 0o600) { return fresh }
        // Another process won the race: use its key.
        guard let theirs = try load() else { throw StoreError.io(url, "vanished right after it was created") }
        return theirs
    }

    /// Nil if no identity exists yet.
    public func load() throws -> X25519.KeyPair? {
        guard let raw = try SecretFile.read(url, maxLength: Self.fileLength) else { return nil }
        guard raw.count == Self.fileLength else {
            throw StoreError.corrupt(url, "expected \(Self.fileLength) bytes, found \(raw.count)")
        }
        guard raw.withUnsafeBytes({ Array($0.prefix(4)) }) == Self.magic else {
            throw StoreError.corrupt(url, "not a lanbridge identity (no LBK1 header)")
        }
        let privateKey = SecureBytes(count: X25519.keyLength) { out in
            raw.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[4...])) }
        }
        return try X25519.KeyPair(privateKey: privateKey)
    }
}
