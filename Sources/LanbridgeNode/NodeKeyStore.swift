#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles

/// The bridge a node has paired with: its key is pinned, and a bridge that presents any other key
/// is refused. Kept as `bridge.json` beside the node's `identity.key`.
public struct BridgePin: Codable, Equatable, Sendable {
    /// The bridge's static X25519 key, as it presented it when pairing.
    public var publicKey: PublicKey
    /// The key's fingerprint, as `lanbridge identity` prints it on the bridge.
    public var fingerprint: Fingerprint
    /// Where the node last reached the bridge (where it paired, until it connects elsewhere).
    public var host: String
    /// The bridge's port there.
    public var port: Int
    /// Where else the bridge said it can be reached (`welcome.addresses`, `host:port`), best first.
    public var addresses: [String]?
    /// The bridge's name from its welcome, if it gave one.
    public var bridgeName: String?
    /// When the pairing was approved.
    public var pairedAt: Date
}

/// Where a node keeps its secrets: its X25519 key pair and the pinned bridge. `FileKeyStore`
/// keeps them in a state directory; on Apple platforms `KeychainKeyStore` keeps them in the
/// Keychain; an app may supply its own (a test, a hardware-backed store).
public protocol NodeKeyStore: Sendable {
    /// The node's key pair, created on first use and the same ever after (it is the node's ID).
    func identity() throws -> X25519.KeyPair
    /// The pinned bridge, or nil before pairing.
    func pin() throws -> BridgePin?
    func save(_ pin: BridgePin) throws
    func forgetPin() throws
}

/// A node's state directory: `identity.key` (mode 0600, the key pair) and `bridge.json` (the pin),
/// in the formats PROTOCOL.md §2.1 gives and the Python package shares.
public struct FileKeyStore: NodeKeyStore {
    static let pinFileName = "bridge.json"
    let directory: StateDirectory

    /// A store in `directory` (made 0700 on first write).
    public init(directory: URL) {
        self.directory = StateDirectory(url: directory)
    }

    var pinURL: URL { directory.file(Self.pinFileName) }

    /// The key pair from `identity.key`, created on first use.
    public func identity() throws -> X25519.KeyPair {
        try IdentityStore(directory: directory).loadOrCreate()
    }

    /// The pin from `bridge.json`, or nil; a damaged file is an error, not a missing pin.
    public func pin() throws -> BridgePin? {
        guard let data = try? Data(contentsOf: pinURL) else { return nil }
        do {
            return try LanbridgeJSON.decoder.decode(BridgePin.self, from: data)
        } catch {
            throw StoreError.corrupt(pinURL, "\(error)")
        }
    }

    /// Writes `bridge.json` atomically.
    public func save(_ pin: BridgePin) throws {
        try directory.prepare()
        try AtomicFile.write(StateJSON.encode(pin), to: pinURL)
    }

    /// Removes `bridge.json`; a file that is not there is no error.
    public func forgetPin() throws {
        do {
            try FileManager.default.removeItem(at: pinURL)
        } catch let error as CocoaError where error.code == .fileNoSuchFile {
        }
    }
}
