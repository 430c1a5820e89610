import FoundationEssentials
import Glibc
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// runtime.json: the running daemon's `RuntimeStatus`.
public struct RuntimeStatusFile: Sendable {
    public static let fileName = StateFormat.File.runtime.rawValue
    public let url: URL

    public init(directory: StateDirectory) {
        url = directory.file(Self.fileName)
    }

    /// Replaced atomically but not synced: it describes a running process, and after a crash the
    /// process it names is gone anyway (`read` checks).
    public func write(_ status: RuntimeStatus) throws {
        try AtomicFile.write(try Self.bytes(of: status), to: url, durable: false)
    }

    /// Compact JSON, the nodes written by hand: under a reconnect storm the file is rewritten at
    /// most every 50 µs per connected node, and `JSONEncoder` made that a fifth of a 10,000-node
    /// storm's CPU (issue 53 §4). Read back with the same decoder as ever. A node's fields are
    /// named here one by one: `StateFormatTests.theRuntimeFileReadsBackWhatWasWritten` fails when
    /// `RuntimeStatus.Node` gains one.
    static func bytes(of status: RuntimeStatus) throws -> [UInt8] {
        var rest = status
        rest.nodes = [:]
        guard case var .object(fields) = try JSONValue(encoding: rest) else { return try StateJSON.encode(status) }
        var nodes: [String: JSONValue] = [:]
        nodes.reserveCapacity(status.nodes.count)
        for (id, node) in status.nodes {
            var entry: [String: JSONValue] = [
                "address": .string(node.address), "foreground": .bool(node.foreground), "connectedAt": .string(ISO8601Text.string(node.connectedAt)),
            ]
            if let id = node.gatewayDeviceId { entry["gatewayDeviceId"] = .string(id) }
            if let session = node.gatewaySession { entry["gatewaySession"] = .string(session) }
            if let approval = node.gatewayApproval { entry["gatewayApproval"] = try JSONValue(encoding: approval) }
            nodes[id] = .object(entry)
        }
        fields["nodes"] = .object(nodes)
        return JSONValue.object(fields).serialized + [UInt8(ascii: "\n")]
    }

    /// The daemon's status, or nil when no daemon is running (or one of a newer format writes it:
    /// its state files are refused anyway).
    public func read() -> RuntimeStatus? {
        guard let data = try? Data(contentsOf: url), let opened = try? StateFormat.current.bytes(data, as: .runtime, url: url),
            let status = try? LanbridgeJSON.decoder.decode(RuntimeStatus.self, from: opened.bytes)
        else {
            return nil
        }
        return kill(status.pid, 0) == 0 || errno == EPERM ? status : nil
    }

    public func remove() {
        unlink(url.path)
    }
}
