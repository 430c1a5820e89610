import FoundationEssentials
import NIOCore

/// Who owns the other end of a loopback TCP connection, from the kernel's socket tables
/// (/proc/self/net/tcp and tcp6, Linux; through self/ so the service's ProcSubset=pid leaves them visible): the row whose local end is our peer's address and whose remote
/// end is ours. An accepted socket carries its listener's owner, so this is the uid of whoever
/// listens on the gateway's port, known before a byte is sent.
public enum SocketOwner {
    /// The uid owning the socket at `peer` connected to `local`, or nil if the tables do not show it.
    public static func uid(peer: SocketAddress, local: SocketAddress) -> UInt32? {
        guard let peerKey = key(peer), let localKey = key(local) else { return nil }
        let table = peerKey.count > 13 ? "/proc/self/net/tcp6" : "/proc/self/net/tcp"
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { return nil }
        return uid(in: text, peer: peerKey, local: localKey)
    }

    /// Parses one table: columns `sl local_address rem_address st … uid …`. The accepted socket's
    /// row may not be there yet (the server's side of a loopback connect completes a moment after
    /// the client's), so the listener's row (state 0A) answers too: bound to the peer's address,
    /// else to the wildcard on its port (Linux lets no other user bind the port beside it).
    static func uid(in table: String, peer: String, local: String) -> UInt32? {
        let port = peer.split(separator: ":").last.map(String.init) ?? ""
        var wildcard: UInt32?
        var listener: UInt32?
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count > 7 else { continue }
            if columns[1] == peer, columns[2] == local { return UInt32(columns[7]) }
            guard columns[3] == "0A" else { continue }
            if columns[1] == peer { listener = UInt32(columns[7]) }
            let address = columns[1].split(separator: ":")
            if address.count == 2, address[1] == port, address[0].allSatisfy({ $0 == "0" }) { wildcard = UInt32(columns[7]) }
        }
        return listener ?? wildcard
    }

    /// An address as the tables print it: each 32-bit word of the address in host order as 8 hex
    /// digits, then the port as 4 ("0100007F:4A55" is 127.0.0.1:19029).
    static func key(_ address: SocketAddress) -> String? {
        guard let port = address.port else { return nil }
        let bytes: [UInt8]
        switch address {
        case let .v4(a): bytes = withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
        case let .v6(a): bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
        default: return nil
        }
        let words = stride(from: 0, to: bytes.count, by: 4).map { i in
            UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
        }
        return words.map { hex($0, 8) }.joined() + ":" + hex(UInt32(port), 4)
    }

    private static func hex(_ value: UInt32, _ digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
