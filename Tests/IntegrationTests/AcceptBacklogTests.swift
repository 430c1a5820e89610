import Foundation
import LanbridgeBridge
import Testing

/// After a bridge restart every node reconnects at once; the listening socket's accept queue must
/// hold them, or the kernel drops SYNs and each dropped node waits out TCP's retries (1, 3, 7 s).
struct AcceptBacklogTests {
    @Test func theListeningSocketQueuesAReconnectStorm() throws {
        let bridge = try BridgeDaemon()
        defer { bridge.stop() }
        // `ss` shows a listening socket's backlog as its Send-Q (third column).
        let ss = Process()
        ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        ss.arguments = ["-Hltn", "sport = :\(bridge.port)"]
        let pipe = Pipe()
        ss.standardOutput = pipe
        try ss.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ss.waitUntilExit()
        let columns = output.split(whereSeparator: \.isWhitespace)
        let somaxconn =
            Int(
                (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 4096
        #expect(columns.count >= 3 && Int(columns[2]) == min(Int(BridgeServer.acceptBacklog), somaxconn), "ss said: \(output)")
    }
}
