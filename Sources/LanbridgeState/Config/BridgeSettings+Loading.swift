import FoundationEssentials
import LanbridgeProtocol

/// Loading config.json: every key checked, its type before its content, an unknown one an error
/// that names the keys there are.
extension BridgeSettings {
    public struct ConfigError: Error, Equatable, CustomStringConvertible {
        public let file: String
        /// The entry at fault, e.g. `access.defaults.ios.add[1]`.
        public let path: String
        public let message: String
        public var description: String { path.isEmpty ? "\(file): \(message)" : "\(file): \(path): \(message)" }
        public init(file: String, path: String, message: String) { (self.file, self.path, self.message) = (file, path, message) }
    }

    public static func parse(_ data: Data, file: String = fileName) throws(ConfigError) -> BridgeSettings {
        guard let root = try? LanbridgeJSON.decoder.decode(JSONValue.self, from: data) else {
            throw ConfigError(file: file, path: "", message: "not valid JSON")
        }
        var reader = Reader(file: file)
        return try reader.settings(root)
    }

    /// Walks the JSON by hand, so each error carries its exact path.
    fileprivate struct Reader {
        let file: String

        func fail(_ path: String, _ message: String) -> ConfigError { ConfigError(file: file, path: path, message: message) }

        func object(_ value: JSONValue, _ path: String, keys: Set<String>) throws(ConfigError) -> [String: JSONValue] {
            guard case let .object(fields) = value else { throw fail(path, "expected an object") }
            if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
                throw fail(path.isEmpty ? unknown : "\(path).\(unknown)", "unknown key (expected one of: \(keys.sorted().joined(separator: ", ")))")
            }
            return fields
        }

        func string(_ value: JSONValue, _ path: String) throws(ConfigError) -> String {
            guard case let .string(text) = value else { throw fail(path, "expected a string") }
            return text
        }

        func bool(_ value: JSONValue, _ path: String) throws(ConfigError) -> Bool {
            guard case let .bool(flag) = value else { throw fail(path, "expected true or false") }
            return flag
        }

        func count(_ value: JSONValue, _ path: String, range: ClosedRange<Int>) throws(ConfigError) -> Int {
            guard case let .number(n) = value, n == n.rounded(), let int = Int(exactly: n), range.contains(int) else {
                throw fail(path, "expected a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return int
        }

        func strings(_ value: JSONValue, _ path: String) throws(ConfigError) -> [String] {
            guard case let .array(items) = value else { throw fail(path, "expected a list of strings") }
            var out: [String] = []
            for (i, item) in items.enumerated() { out.append(try string(item, "\(path)[\(i)]")) }
            return out
        }

        /// `wake` and `notify`: a hook's exec, args and timeout (and the keys `also` names, read by the caller).
        func hook(_ value: JSONValue, _ path: String, timeout: Limit, also: Set<String> = []) throws(ConfigError) -> BridgeSettings.Hook {
            let fields = try object(value, path, keys: Set(["exec", "args", "timeoutMs"]).union(also))
            var hook = BridgeSettings.Hook()
            if let v = fields["exec"] {
                let exec = try string(v, "\(path).exec")
                guard exec.hasPrefix("/") else { throw fail("\(path).exec", "expected an absolute path to an executable") }
                hook.exec = exec
            }
            if let v = fields["args"] {
                hook.args = try strings(v, "\(path).args")
                guard hook.args.count <= 32 else { throw fail("\(path).args", "at most 32 entries") }
            }
            hook.timeoutMs = timeout.defaultValue
            if let v = fields["timeoutMs"] { hook.timeoutMs = try count(v, timeout.path, range: timeout.spec.range) }
            return hook
        }

        func patterns(_ value: JSONValue, _ path: String, catalog: CommandCatalog) throws(ConfigError) -> [String] {
            try checkedPatterns(value, path, catalog: catalog).map(\.text)
        }

        /// Each entry read as a pattern the catalog knows, with its text (the one reading: no
        /// second parse that could trap).
        func checkedPatterns(_ value: JSONValue, _ path: String, catalog: CommandCatalog) throws(ConfigError) -> [(text: String, pattern: CommandPattern)] {
            var out: [(text: String, pattern: CommandPattern)] = []
            for (i, text) in try strings(value, path).enumerated() {
                do { out.append((text, try catalog.check(text))) } catch { throw fail("\(path)[\(i)]", "\(error)") }
            }
            return out
        }

        func listen(_ value: JSONValue, _ key: String, allowRemote: Bool) throws(ConfigError) -> ListenAddress {
            do {
                return try ListenAddress(try string(value, key), allowRemote: allowRemote)
            } catch let problem as ListenAddress.Problem {
                throw fail(key, problem.description)
            } catch { throw fail(key, "\(error)") }
        }

        mutating func settings(_ root: JSONValue) throws(ConfigError) -> BridgeSettings {
            var settings = BridgeSettings()
            // The format first: a newer file's keys are not this version's to judge.
            if case let .object(fields) = root, let v = fields["version"] {
                let reads = StateFormat.current.version(.config)
                guard case let .number(n) = v, let found = Int(exactly: n), found >= 1 else { throw fail("version", "expected a whole number from 1") }
                if found > reads {
                    throw fail(
                        "version",
                        "format \(found), written for a newer lanbridge; this one reads format \(reads). Run the newer lanbridge, or remove keys it added and set \"version\": \(reads)"
                    )
                }
                if found < reads { throw fail("version", "format \(found) is older than this lanbridge reads (\(reads)); see lanbridge-config(5)") }
            }
            let top = try object(
                root, "",
                keys: [
                    "gateway", "commands", "access", "limits", "admission", "metrics", "ui", "listen", "addresses", "wake", "notify", "canvas",
                    "openclawApps", "browser", "version",
                ])
            if let apps = top["openclawApps"] {
                let a = try object(apps, "openclawApps", keys: ["enabled", "listen", "plainWebSocket"])
                if let v = a["enabled"] { settings.openClawApps.enabled = try bool(v, "openclawApps.enabled") }
                if let v = a["plainWebSocket"] { settings.openClawApps.plainWebSocket = try bool(v, "openclawApps.plainWebSocket") }
                if let v = a["listen"] {
                    let text = try string(v, "openclawApps.listen")
                    guard CanvasListen(text) != nil else { throw fail("openclawApps.listen", "expected PORT, :PORT or HOST:PORT") }
                    settings.openClawApps.listen = text
                }
            }
            if let browser = top["browser"] {
                let b = try object(browser, "browser", keys: ["enabled", "listen", "tls", "names"])
                if let v = b["enabled"] { settings.browser.enabled = try bool(v, "browser.enabled") }
                if let v = b["names"] { settings.browser.names = try strings(v, "browser.names") }
                switch b["tls"] {
                case nil, .string("ca"): settings.browser.tls = .bridgeCA
                case .string("self-signed"): settings.browser.tls = .selfSigned
                case let .some(.object(files)):
                    let f = try object(.object(files), "browser.tls", keys: ["certFile", "keyFile"])
                    guard let cert = f["certFile"], let key = f["keyFile"] else { throw fail("browser.tls", "give both certFile and keyFile") }
                    settings.browser.tls = .files(certificate: try string(cert, "browser.tls.certFile"), key: try string(key, "browser.tls.keyFile"))
                default:
                    throw fail("browser.tls", "expected \"ca\", \"self-signed\" or {\"certFile\": …, \"keyFile\": …}")
                }
                if let v = b["listen"] {
                    let text = try string(v, "browser.listen")
                    guard CanvasListen(text) != nil else { throw fail("browser.listen", "expected PORT, :PORT or HOST:PORT") }
                    settings.browser.listen = text
                }
            }
            if let canvas = top["canvas"] {
                let c = try object(canvas, "canvas", keys: ["enabled", "listen", "upstream", "allowOrigins", "denyOrigins", "capabilityTTLMs"])
                if let v = c["enabled"] { settings.canvas.enabled = try bool(v, "canvas.enabled") }
                if let v = c["listen"] {
                    let text = try string(v, "canvas.listen")
                    guard CanvasListen(text) != nil else { throw fail("canvas.listen", "expected PORT, :PORT or HOST:PORT (e.g. 18793 or 192.168.1.10:18793)") }
                    settings.canvas.listen = text
                }
                if let v = c["capabilityTTLMs"] { settings.canvas.capabilityTTLMs = try count(v, Limit.capabilityTTLMs.path, range: Limit.capabilityTTLMs.spec.range) }
                if let v = c["upstream"] {
                    let text = try string(v, "canvas.upstream")
                    guard CanvasUpstream(text) != nil else {
                        throw fail("canvas.upstream", "expected a loopback http://127.0.0.1:PORT (or [::1], localhost) or unix:/absolute/path")
                    }
                    settings.canvas.upstream = text
                }
                for key in ["allowOrigins", "denyOrigins"] {
                    guard let v = c[key] else { continue }
                    var parsed: [OriginPattern] = []
                    for (i, text) in try strings(v, "canvas.\(key)").enumerated() {
                        do { parsed.append(try OriginPattern(text)) } catch {
                            throw fail("canvas.\(key)[\(i)]", "\(error.reason) (for example https://example.com or https://*.example.com)")
                        }
                    }
                    if key == "allowOrigins" { settings.canvas.allowOrigins = parsed } else { settings.canvas.denyOrigins = parsed }
                }
            }
            if let wake = top["wake"] { settings.wake = try hook(wake, "wake", timeout: .wakeTimeoutMs) }
            if let notify = top["notify"] {
                settings.notify.hook = try hook(notify, "notify", timeout: .notifyTimeoutMs, also: ["consoleUid"])
                if let v = notify["consoleUid"] { settings.notify.consoleUid = UInt32(try count(v, "notify.consoleUid", range: 0...Int(UInt32.max - 1))) }
            }
            if let v = top["listen"] {
                settings.listen = try strings(v, "listen")
                guard (1...8).contains(settings.listen.count) else { throw fail("listen", "expected 1 to 8 entries") }
            }
            if let v = top["addresses"] {
                settings.addresses = try strings(v, "addresses")
                guard settings.addresses.count <= BridgeSettings.maxAddresses else { throw fail("addresses", "at most \(BridgeSettings.maxAddresses) entries") }
                for (i, text) in settings.addresses.enumerated() where ReachableAddress(text, defaultPort: 1) == nil {
                    throw fail("addresses[\(i)]", "expected an IP address or host name, optionally with :port")
                }
            }
            if let metrics = top["metrics"] {
                let m = try object(metrics, "metrics", keys: ["listen", "allowRemote"])
                if let v = m["allowRemote"] { settings.metrics.allowRemote = try bool(v, "metrics.allowRemote") }
                if let v = m["listen"] { settings.metrics.listen = try listen(v, "metrics.listen", allowRemote: settings.metrics.allowRemote) }
            }
            if let console = top["ui"] {
                let u = try object(console, "ui", keys: ["enabled", "listen", "allowRemote"])
                if let v = u["enabled"] { settings.console.enabled = try bool(v, "ui.enabled") }
                if let v = u["allowRemote"] { settings.console.allowRemote = try bool(v, "ui.allowRemote") }
                if let v = u["listen"] { settings.console.listen = try listen(v, "ui.listen", allowRemote: settings.console.allowRemote) }
            }
            if let admission = top["admission"] {
                let a = try object(admission, "admission", keys: Set(Limit.in(.admission).map(\.rawValue)))
                for limit in Limit.in(.admission) {
                    if let v = a[limit.rawValue] { settings.admission[limit] = try count(v, "admission.\(limit.rawValue)", range: limit.spec.range) }
                }
            }
            if let gateway = top["gateway"] {
                let g = try object(gateway, "gateway", keys: ["url", "tokenFile", "allowRemote", "enabled", "caFile", "auth", "owner", "protocol"])
                if let v = g["protocol"] {
                    settings.gateway.wire = try string(v, "gateway.protocol")
                    guard Gateway.wires.contains(settings.gateway.wire) else { throw fail("gateway.protocol", "expected \"lanbridge\" or \"openclaw\"") }
                }
                if let v = g["auth"] {
                    settings.gateway.auth = try string(v, "gateway.auth")
                    guard ["proof", "bearer"].contains(settings.gateway.auth) else { throw fail("gateway.auth", "expected \"proof\" or \"bearer\"") }
                }
                if let v = g["owner"] {
                    if case let .array(items) = v {
                        var owners: [String] = []
                        for (index, item) in items.enumerated() { owners.append(try string(item, "gateway.owner[\(index)]")) }
                        settings.gateway.owners = owners
                    } else {
                        settings.gateway.owners = [try string(v, "gateway.owner")]
                    }
                }
                if let v = g["caFile"] { settings.gateway.caFile = try string(v, "gateway.caFile") }
                if let v = g["url"] { settings.gateway.url = try string(v, "gateway.url") }
                if let v = g["tokenFile"] { settings.gateway.tokenFile = try string(v, "gateway.tokenFile") }
                if let v = g["allowRemote"] { settings.gateway.allowRemote = try bool(v, "gateway.allowRemote") }
                if let v = g["enabled"] { settings.gateway.enabled = try bool(v, "gateway.enabled") }
            }
            if let commands = top["commands"] {
                let c = try object(commands, "commands", keys: ["extra"])
                if let v = c["extra"] {
                    settings.extraCommands = try strings(v, "commands.extra")
                    for (i, name) in settings.extraCommands.enumerated() {
                        guard let pattern = try? CommandPattern(name), pattern != CommandPattern.everything, !name.hasSuffix("*") else {
                            throw fail("commands.extra[\(i)]", "\"\(name)\" is not a command name (lowercase words joined by dots, no '*')")
                        }
                    }
                }
            }
            let catalog = settings.catalog
            if let access = top["access"] {
                let a = try object(access, "access", keys: ["defaults", "foreground", "input", "backgroundRetryAfterMs"])
                if let defaults = a["defaults"] {
                    let perPlatform = try object(defaults, "access.defaults", keys: Set(BridgeSettings.platforms + ["*"]))
                    for (platform, entry) in perPlatform {
                        let path = "access.defaults.\(platform)"
                        let e = try object(entry, path, keys: ["add", "remove", "ask", "sensitive"])
                        if let v = e["add"] { settings.defaultsAdd[platform] = try patterns(v, "\(path).add", catalog: catalog) }
                        if let v = e["remove"] { settings.defaultsRemove[platform] = try patterns(v, "\(path).remove", catalog: catalog) }
                        if let v = e["ask"] { settings.defaultsAsk[platform] = try patterns(v, "\(path).ask", catalog: catalog) }
                        if let v = e["sensitive"] {
                            let text = try string(v, "\(path).sensitive")
                            guard let choice = AccessRules.SensitiveChoice(rawValue: text) else {
                                throw fail("\(path).sensitive", "expected \"grant\", \"ask\" or \"withhold\"")
                            }
                            settings.defaultsSensitive[platform] = choice
                        }
                    }
                }
                if let v = a["foreground"] {
                    settings.policy.foregroundCommands = try checkedPatterns(v, "access.foreground", catalog: catalog).map(\.pattern)
                }
                if let v = a["input"] {
                    settings.policy.inputCommands = try checkedPatterns(v, "access.input", catalog: catalog).map(\.pattern)
                }
                if let v = a["backgroundRetryAfterMs"] {
                    settings.policy.backgroundRetryAfterMs = try count(v, Limit.backgroundRetryAfterMs.path, range: Limit.backgroundRetryAfterMs.spec.range)
                }
            }
            if let limits = top["limits"] {
                let l = try object(limits, "limits", keys: Set(Limit.in(.limits).map(\.rawValue) + ["snapshotCommands"] + Limit.retired.keys))
                for limit in Limit.in(.limits) {
                    if let v = l[limit.rawValue] { settings.limits[limit] = try count(v, "limits.\(limit.rawValue)", range: limit.spec.range) }
                }
                if let v = l["snapshotCommands"] { settings.limits.snapshotCommands = try patterns(v, "limits.snapshotCommands", catalog: catalog) }
            }
            return settings
        }
    }
}
