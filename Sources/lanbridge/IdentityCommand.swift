import ArgumentParser
import FoundationEssentials
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState

struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Print this bridge's fingerprint, creating its key pair on first use.",
        discussion: """
            The fingerprint (e.g. 7K2M-9QXD-3HJA-PW4T) is what a node pins after pairing; read it aloud to check a node is talking to this bridge. The private key is never printed.
            """
    )

    @OptionGroup var state: StateOptions
    @Flag(help: "Print JSON.") var json = false

    struct Report: Encodable {
        let fingerprint: String
        let publicKey: String
        let keyFile: String
        let created: Bool
    }

    func run() throws {
        try Output.run {
            let store = IdentityStore(directory: state.directory)
            let existed = FileManager.default.fileExists(atPath: store.url.path)
            guard let publicKey = PublicKey(bytes: try store.publicKey(creating: true)) else { throw ExitCode.failure }
            let report = Report(
                fingerprint: publicKey.fingerprint.description, publicKey: publicKey.base64,
                keyFile: store.url.path, created: !existed)
            if json { return try Output.json(report) }
            if report.created { Output.note("Created a new bridge identity in \(report.keyFile)") }
            print("fingerprint  \(report.fingerprint)")
            print("public key   \(report.publicKey)")
        }
    }
}
