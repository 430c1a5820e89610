#if canImport(Security)
    #if canImport(FoundationEssentials)
        import FoundationEssentials
    #else
        import Foundation
    #endif
    import LanbridgeCrypto
    import LanbridgeFiles
    import Security

    /// `NodeKeyStore` in the Keychain (iOS, macOS): the private key and the pin as two generic-password
    /// items of `service`, readable only while the device is unlocked and never synced or backed up to
    /// another device. Not compiled on Linux, where this project is built and tested: keep it small.
    public struct KeychainKeyStore: NodeKeyStore {
        /// The Keychain service the two items are filed under; one per node identity.
        public let service: String

        /// A store under `service`; give each node identity in one app its own.
        public init(service: String = "lanbridge.node") {
            self.service = service
        }

        /// The key pair from the Keychain, made and stored on first use.
        public func identity() throws -> X25519.KeyPair {
            if let stored = try read("identity") {
                return try X25519.KeyPair(privateKey: SecureBytes(copying: Array(stored)))
            }
            let fresh = X25519.KeyPair.generate()
            try write("identity", fresh.privateKey.withUnsafeBytes { Data($0) })
            return fresh
        }

        /// The pinned bridge, or nil before pairing.
        public func pin() throws -> BridgePin? {
            try read("bridge").map { try LanbridgeJSON.decoder.decode(BridgePin.self, from: $0) }
        }

        /// Pins `pin`, replacing any earlier one.
        public func save(_ pin: BridgePin) throws {
            try write("bridge", Data(try StateJSON.encode(pin)))
        }

        /// Removes the pin; a pin that is not there is no error.
        public func forgetPin() throws {
            let status = SecItemDelete(query("bridge") as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
        }

        /// A Keychain call that failed, with its `OSStatus`.
        public struct KeychainError: Error, CustomStringConvertible {
            /// What Security.framework returned.
            public let status: OSStatus
            /// "Keychain error -25300".
            public var description: String { "Keychain error \(status)" }
        }

        private func query(_ account: String) -> [String: Any] {
            [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
        }

        private func read(_ account: String) throws -> Data? {
            var query = query(account)
            query[kSecReturnData as String] = true
            var item: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
            return data
        }

        private func write(_ account: String, _ data: Data) throws {
            SecItemDelete(query(account) as CFDictionary)
            var attributes = query(account)
            attributes[kSecValueData as String] = data
            attributes[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            let status = SecItemAdd(attributes as CFDictionary, nil)
            guard status == errSecSuccess else { throw KeychainError(status: status) }
        }
    }
#endif
