import ArgumentParser
import Foundation
import LanbridgeState

/// What commands print, and how errors become exit codes (sysexits.h numbers).
enum Output {
    static func json(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    static func note(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Runs a command body, turning store errors into a one-line message and a meaningful exit code.
    static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as StoreError {
            note("lanbridge: \(error)")
            switch error {
            case .corrupt, .insecurePermissions: throw ExitCode(65)  // EX_DATAERR
            case .io: throw ExitCode(74)  // EX_IOERR
            case .lockTimeout: throw ExitCode(75)  // EX_TEMPFAIL
            }
        }
    }
}
