import ArgumentParser
import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState
import LanbridgeStores

/// `lanbridge config show`: the configuration in effect, each value with where it came from.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "The configuration in effect, and where each value comes from.",
        discussion: """
            The config file is $LANBRIDGE_CONFIG or --config, else config.json in the state directory; every key is described in lanbridge-config(5) (`man lanbridge-config`). `serve`'s flags (--listen, --gateway, --canvas-listen, …) override the file for that run: `lanbridge status` shows what the running daemon uses.

              $ lanbridge config show              # KEY, VALUE, SOURCE (default or file)
              $ lanbridge config show --json       # [{key, value, source, unit?}]
            """,
        subcommands: [Show.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the effective configuration: every key, its value, and whether it is the default or the file's.",
            discussion: "Exit codes: 0 shown, 78 the config file is wrong (the error names the entry).")
        @OptionGroup var state: StateOptions
        @Flag(help: "Print JSON: [{key, value, source, unit?}].") var json = false

        struct Row: Encodable {
            let key: String
            let value: JSONValue
            let source: String
            let unit: String?
        }

        func run() throws {
            try Output.run {
                // The loader checks the whole file first: a wrong entry is its error, exit 78.
                let settings = try state.settings()
                let file =
                    state.config ?? ProcessInfo.processInfo.environment["LANBRIDGE_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
                    ?? state.directory.file(BridgeSettings.fileName).path
                let raw = FileManager.default.contents(atPath: file).flatMap { try? LanbridgeJSON.decoder.decode(JSONValue.self, from: $0) }
                func source(_ path: String) -> String {
                    var value = raw
                    for part in path.split(separator: ".") { value = value?[String(part)] }
                    return value == nil ? "default" : "file"
                }
                func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
                var rows: [Row] = [
                    ("listen", settings.listen.isEmpty ? .string("lan") : .array(settings.listen.map { .string($0) })),
                    ("gateway.url", .string(settings.gateway.url)), ("gateway.protocol", .string(settings.gateway.wire)),
                    ("gateway.auth", .string(settings.gateway.auth)), ("gateway.tokenFile", text(settings.gateway.tokenFile)),
                    ("gateway.enabled", .bool(settings.gateway.enabled)),
                    ("canvas.enabled", .bool(settings.canvas.enabled)), ("canvas.listen", text(settings.canvas.listen)),
                    ("canvas.upstream", text(settings.canvas.upstream)),
                    ("openclawApps.enabled", .bool(settings.openClawApps.enabled)), ("openclawApps.listen", text(settings.openClawApps.listen)),
                    ("browser.enabled", .bool(settings.browser.enabled)), ("browser.listen", text(settings.browser.listen)),
                    ("metrics.listen", text(settings.metrics.listen?.description)),
                    ("ui.enabled", .bool(settings.console.enabled)), ("ui.listen", text(settings.console.listen?.description)),
                    ("wake.exec", text(settings.wake.exec)), ("notify.exec", text(settings.notify.hook.exec)),
                    ("notify.consoleUid", text(settings.notify.consoleUid.map(String.init))),
                ].map { Row(key: $0.0, value: $0.1, source: source($0.0), unit: nil) }
                for limit in Limit.allCases {
                    let value = settings.value(of: limit)
                    rows.append(Row(key: limit.path, value: value.map { .number(Double($0)) } ?? .string("derived"), source: source(limit.path), unit: limit.spec.unit))
                }
                if json { return try Output.json(rows) }
                print("config file: \(file)\(raw == nil ? " (none: every value is the default)" : "")")
                Output.table(
                    ["KEY", "VALUE", "SOURCE"],
                    rows.map { row in
                        let shown: String
                        switch row.value {
                        case .null: shown = "-"
                        case let .string(s): shown = s
                        case let .array(items): shown = items.compactMap(\.stringValue).joined(separator: ",")
                        case let .number(n): shown = "\(Int(n))" + (row.unit.map { " \($0)" } ?? "")
                        case let .bool(b): shown = b ? "true" : "false"
                        case .object: shown = "…"
                        }
                        return [row.key, shown, row.source]
                    })
                if RuntimeStatusFile(directory: state.directory).read() != nil {
                    print("A daemon runs on this state: its flags may override these; `lanbridge status` shows what it uses.")
                }
            }
        }
    }
}
