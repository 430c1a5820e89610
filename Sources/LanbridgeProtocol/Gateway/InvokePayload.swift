#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What an answer carries to the gateway or the control socket: a value the bridge built
/// (`node.list`), or a node's result as the exact bytes it arrived in, relayed without being parsed
/// into values and encoded again. A snapshot's megabytes are copied once on the way through.
public enum InvokePayload: Sendable, Equatable {
    case value(JSONValue?)
    case raw(ArraySlice<UInt8>)

    /// The payload's JSON text.
    public var bytes: ArraySlice<UInt8> {
        switch self {
        case let .raw(bytes): bytes
        case let .value(value):
            ArraySlice((try? LanbridgeJSON.compact.encode(value ?? .null)).map(Array.init) ?? Array("null".utf8))
        }
    }
}
