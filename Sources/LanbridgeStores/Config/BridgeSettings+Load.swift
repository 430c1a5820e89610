import FoundationEssentials
import LanbridgeFiles
import LanbridgeState

extension BridgeSettings {
    /// Loads the config in the state directory; its absence means the defaults.
    public static func load(directory: StateDirectory) throws(ConfigError) -> BridgeSettings {
        try load(from: directory.file(fileName), required: false)
    }

    public static func load(from url: URL, required: Bool = true) throws(ConfigError) -> BridgeSettings {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            if !required, !FileManager.default.fileExists(atPath: url.path) { return BridgeSettings() }
            throw ConfigError(file: url.path, path: "", message: "cannot read the file")
        }
        return try parse(data, file: url.path)
    }
}
