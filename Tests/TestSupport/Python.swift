import Foundation

/// The Python interpreter the interop peers run under.
public enum Python {
    public static let executable: String = which("python3") ?? "/usr/bin/python3"

    public static func hasModule(_ name: String) -> Bool {
        ChildProcess.exitStatus(executable, ["-c", "import \(name)"]) == 0
    }

    private static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
