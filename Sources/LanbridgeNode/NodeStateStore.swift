import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles

/// The bridge a node has paired with: its key is pinned, and a bridge that presents any other key
/// is refused. Kept as `bridge.json` beside the node's `identity.key`.
public struct BridgePin: Codable, Equatable, Sendable {
    public var publicKey: PublicKey
    public var fingerprint: Fingerprint
    public var host: String
    public var port: Int
    public var bridgeName: String?
    public var pairedAt: Date
}

/// A node's own state directory: `identity.key` (its key pair) and `bridge.json` (the pin).
struct NodeStateStore: Sendable {
    static let pinFileName = "bridge.json"
    let directory: StateDirectory

    var pinURL: URL { directory.file(Self.pinFileName) }

    func identity() throws -> X25519.KeyPair {
        try IdentityStore(directory: directory).loadOrCreate()
    }

    func pin() throws -> BridgePin? {
        guard let data = try? Data(contentsOf: pinURL) else { return nil }
        do {
            return try StateJSON.decoder.decode(BridgePin.self, from: data)
        } catch {
            throw StoreError.corrupt(pinURL, "\(error)")
        }
    }

    func save(_ pin: BridgePin) throws {
        try directory.prepare()
        try AtomicFile.write(StateJSON.encode(pin), to: pinURL)
    }

    func forgetPin() {
        try? FileManager.default.removeItem(at: pinURL)
    }
}
