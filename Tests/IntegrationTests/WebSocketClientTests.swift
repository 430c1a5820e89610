import Foundation
import LanbridgeNet
import NIOCore
import Testing
import TestSupport

/// The WebSocket client against a server that speaks first: OpenClaw's gateway sends its challenge
/// right behind the 101, and TCP may deliver both in one read.
struct WebSocketClientTests {
    /// A server that writes the 101 and a text frame in one send(); prints its port, then "sent".
    static let script = #"""
        import base64, hashlib, re, socket, sys
        s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); print(s.getsockname()[1], flush=True)
        c, _ = s.accept(); heard = b''
        while not heard.endswith(b'\r\n\r\n'):
            heard += c.recv(65536)
        key = re.search(rb'Sec-WebSocket-Key: *([^\r]+)', heard, re.I).group(1)
        accept = base64.b64encode(hashlib.sha1(key + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
        payload = b'{"type":"event","event":"connect.challenge"}'
        c.sendall(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept
                  + b'\r\n\r\n' + bytes([0x81, len(payload)]) + payload)
        print('sent', flush=True)
        c.settimeout(5)  # a client that lost the frame waits for it: end the test, do not hang it
        try:
            c.recv(1)
        except OSError:
            pass
        c.close()
        """#

    @Test func aFrameInTheSameReadAsThe101IsDelivered() async throws {
        let server = try ChildProcess(URL(fileURLWithPath: Python.executable), ["-c", Self.script])
        let port = try #require(Int(try server.nextLine() ?? ""))
        let connection = try await WebSocketClient.connect(to: .tcp(host: "127.0.0.1", port: port), path: "/", maxMessageSize: 1 << 16)
        var first: [UInt8]?
        try await connection.run { _, messages in
            for try await message in messages { first = message; break }
        }
        #expect(first.map { String(decoding: $0, as: UTF8.self) } == #"{"type":"event","event":"connect.challenge"}"#)
        server.killIfRunning()
    }
}
