#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

import LanbridgeProtocol

/// How state files are written as JSON: `LanbridgeJSON.pretty` and a trailing newline, so a file
/// changes only where its content does (and diffs stay readable). They are read with `LanbridgeJSON.decoder`.
package enum StateJSON {
    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        Array(try LanbridgeJSON.pretty.encode(value)) + [UInt8(ascii: "\n")]
    }
}
