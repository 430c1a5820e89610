import ArgumentParser
import FoundationEssentials
import LanbridgeBridge
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `lanbridge canvas`: the canvas relay's certificate.
struct CanvasCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canvas",
        abstract: "The agent's canvas relay: its certificate.",
        discussion: """
            Paired nodes load the agent's canvas and A2UI pages from the bridge's canvas relay over HTTPS. Its certificate is self-signed and kept in the state directory (canvas-tls.pem); nodes pin its SHA-256, which they learn inside their encrypted session, so no certificate authority is involved. `lanbridge status` shows the fingerprint.

              $ lanbridge canvas rotate-cert    # a new key; nodes hear the new pin
            """,
        subcommands: [RotateCert.self])

    struct RotateCert: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-cert",
            abstract: "Replace the canvas relay's key and certificate.",
            discussion:
                "With the daemon running, it makes the new certificate, serves it to new connections at once and sends every connected node its new pin. Without it, the file is replaced and takes effect when the daemon starts. Exit codes: 0 done, 69 the relay is off or the daemon did not answer."
        )
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON: {tlsSha256, daemon}.") var json = false

        func run() throws {
            try Output.run {
                let sha256: String
                let daemon: Bool
                // With the daemon up it rotates (both doors, the nodes told); without, the file alone.
                if let answer = try ControlClient.ask(state.directory, .canvasRotateCertificate, timeout: 30) {
                    guard let hex = answer["tlsSha256"]?.stringValue else { throw ExitCode(69) }
                    (sha256, daemon) = (hex, true)
                } else {
                    sha256 = try CanvasCertificateFile.rotate(directory: state.directory)
                    daemon = false
                }
                if json { return try Output.json(["tlsSha256": .string(sha256), "daemon": .bool(daemon)] as JSONValue) }
                print("The canvas relay's certificate is new: sha256 \(sha256).")
                print(
                    daemon
                        ? "Connected nodes were sent the new pin; others learn it when they next connect."
                        : "The daemon is not running: it serves the new certificate when it starts.")
            }
        }
    }
}
