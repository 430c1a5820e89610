import ArgumentParser
import FoundationEssentials
import LanbridgeNet
import Glibc
import LanbridgeBridge
import LanbridgeFiles
import LanbridgeProtocol
import LanbridgeState

/// A startup setting that cannot work as given (exit 78).
struct ConfigurationProblem: Error, CustomStringConvertible {
    let description: String
}

/// What commands print, and how errors become exit codes (sysexits.h numbers).
enum Output {
    static func json(_ value: some Encodable) throws {
        print(String(decoding: try LanbridgeJSON.pretty.encode(value), as: UTF8.self))
    }

    static func note(_ text: String) {
        StandardStream.writeLine(text)
    }

    /// Runs a command body, turning store errors into a one-line message and a meaningful exit code.
    static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            throw exitCode(for: error)
        }
    }

    static func runAsync(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch is CancellationError {
        } catch {
            throw exitCode(for: error)
        }
    }

    private static func exitCode(for error: any Error) -> any Error {
        switch error {
        case is ExitCode, is ValidationError, is CleanExit:
            return error
        case let error as BindProblem:
            note("lanbridge: \(error)")
            if case .inUse = error { return ExitCode(75) }  // EX_TEMPFAIL: free the port and retry
            if case .notPermitted = error { return ExitCode(77) }  // EX_NOPERM
            return ExitCode(78)  // EX_CONFIG
        case is DaemonLock.Held:
            note("lanbridge: \(error)")
            return ExitCode(75)  // EX_TEMPFAIL
        case is BridgeSettings.ConfigError:
            // Every key, its type and range: the man page the package installs.
            note("lanbridge: \(error)\n(every key is described in lanbridge-config(5): man lanbridge-config)")
            return ExitCode(78)  // EX_CONFIG
        case let error as BridgeCAFiles.Problem:
            note("lanbridge: \(error)")
            switch error.kind {
            case .invalid: return ExitCode(64)  // EX_USAGE
            case .exists: return ExitCode(73)  // EX_CANTCREAT
            case .missing: return ExitCode(69)  // EX_UNAVAILABLE
            case .failed: return ExitCode(70)  // EX_SOFTWARE
            }
        case is GatewayEndpoint.Invalid, is ConfigurationProblem:
            note("lanbridge: \(error)")
            return ExitCode(78)  // EX_CONFIG
        case is IdentityStore.KeyNotReadable:
            note("lanbridge: \(error)")
            return ExitCode(77)  // EX_NOPERM
        case is IdentityStore.NoIdentityYet:
            note("lanbridge: \(error)")
            return ExitCode(66)  // EX_NOINPUT
        case let error as StoreError:
            note("lanbridge: \(error)")
            let denied = String(cString: strerror(EACCES))
            // Permission denied: where, when the error says.
            let notYours: String? =
                switch error {
                case let .io(url, reason) where reason.hasSuffix(denied): url.deletingLastPathComponent().path
                case let .notMade(_, reason) where reason.contains(denied): "the state directory"
                default: nil
                }
            if let notYours {
                note("lanbridge: \(notYours) is not yours; members of its group may use it (sudo usermod -aG lanbridge $USER, then log in again), or use sudo")
                return ExitCode(77)  // EX_NOPERM
            }
            switch error {
            case .corrupt, .newerFormat, .insecurePermissions: return ExitCode(65)  // EX_DATAERR
            case .insecureDirectory: return ExitCode(78)  // EX_CONFIG
            case .missingDirectory: return ExitCode(66)  // EX_NOINPUT
            case .io: return ExitCode(74)  // EX_IOERR
            case .lockTimeout: return ExitCode(75)  // EX_TEMPFAIL
            case .notMade: return ExitCode(74)  // EX_IOERR
            case .deferred: return ExitCode(75)  // EX_TEMPFAIL: it completes later
            }
        default:
            // Refusals (unknown ID, expired request, code mismatch) and anything else.
            note("lanbridge: \(error)")
            return ExitCode(1)
        }
    }
}

extension Output {
    /// Prints rows under a header, columns padded to their widest cell.
    /// Every cell is escaped (`SafeText`): names and addresses come from the network, and none
    /// may reach the terminal raw (issue 36: a DNS instance name cleared the screen).
    static func table(_ header: [String], _ rows: [[String]]) {
        let rows = rows.map { $0.map(SafeText.escape) }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            print(
                zip(row, widths).map { $0.0.padded(to: $0.1) }.joined(separator: "  ")
                    .trimmingWhitespace())
        }
    }

    /// "3m", "45s", "2h".
    static func duration(_ seconds: TimeInterval) -> String { NumberText.duration(seconds: seconds) }
}
