import Foundation

/// The Python interpreter the interop peers run under.
public enum Python {
    public static let executable: String = which("python3") ?? "/usr/bin/python3"

    public static func hasModule(_ name: String) -> Bool {
        ChildProcess.exitStatus(executable, ["-c", "import \(name)"]) == 0
    }

    /// A loopback port free a moment ago, for a server that cannot report the one it took.
    public static func freePort() throws -> Int {
        let probe = try ChildProcess(
            URL(fileURLWithPath: executable),
            ["-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"])
        guard let port = try probe.nextLine().flatMap({ Int($0) }) else { throw NoFreePort() }
        return port
    }

    struct NoFreePort: Error {}

    private static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
