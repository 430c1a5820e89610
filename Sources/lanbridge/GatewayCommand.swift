import ArgumentParser
import LanbridgeBridge
import LanbridgeProtocol
import LanbridgeStores

/// `lanbridge gateway`: the link to the agent's gateway.
struct GatewayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "The link to the agent's gateway.",
        discussion: """
            `lanbridge status` says whether the link is up and, when it is down, why and when the next try is ("down: nothing listens on 127.0.0.1:18789; next try at …"). After a failure the daemon waits longer each time, up to 30 s; once you have fixed the cause (started the gateway, corrected the token), reconnect tries at once:

              $ lanbridge gateway reconnect
            """,
        subcommands: [Reconnect.self])

    struct Reconnect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Dial the gateway now instead of waiting out the backoff.",
            discussion:
                "Exit codes: 0 the link dials now (or is up already; nothing changes then), 69 the daemon is not running, has no gateway, or speaks OpenClaw's protocol (each node's socket there redials on its own)."
        )
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON: {redialled, state}.") var json = false

        func run() throws {
            try Output.run {
                let answer = try ControlClient.ask(
                    state.directory, .gatewayReconnect, notRunning: "the daemon is not running (start it: lanbridge serve); it dials the gateway when it starts")
                if json { return try Output.json(answer) }
                switch answer["state"]?.stringValue {
                case "up": print("The gateway link is up; nothing to do.")
                case "dialling": print("Dialling the gateway now; `lanbridge status` shows how it went.")
                default: print("The daemon is dialling the gateway already; `lanbridge status` shows how it goes.")
                }
            }
        }
    }
}
