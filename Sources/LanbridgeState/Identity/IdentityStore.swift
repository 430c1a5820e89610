import Foundation
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
public struct IdentityStore: Sendable {
    public static let fileName = "identity.key"
    static let magic = Array("LBK1".utf8)
    static let fileLength = 4 + X25519.keyLength

    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// Loads the key pair, creating it on first use. Safe when two processes race to create it.
    public func loadOrCreate() throws -> X25519.KeyPair {
        if let existing = try load() { return existing }
        try StateDirectory(url: url.deletingLastPathComponent()).prepare()
        let fresh = X25519.KeyPair.generate()
        let contents = SecureBytes(count: Self.fileLength) { out in
            out.copyBytes(from: Self.magic)
            fresh.privateKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[Self.magic.count...]).copyMemory(from: $0) }
        }
        if try AtomicFile.create(contents, at: url) { return fresh }
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
