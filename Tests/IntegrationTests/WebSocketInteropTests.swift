import Foundation
import Testing
import TestSupport

/// The bridge's gateway link against a gateway we did not write: Python `websockets`, coded from
/// pairing/PROTOCOL.md §12 alone.
@Suite(.serialized)
struct WebSocketInteropTests {
    @Test(.enabled(if: Python.hasModule("websockets"), "needs Python websockets (scripts/setup installs it)"))
    func aPythonWebsocketsGatewayDrivesListDescribeAndInvoke() throws {
        try drive(tls: false)
    }

    @Test(
        .enabled(
            if: Python.hasModule("websockets") && ChildProcess.exitStatus("/usr/bin/openssl", ["version"]) == 0,
            "needs Python websockets and openssl (scripts/setup installs them)"))
    func theSameOverTLSWithTheGatewaysCertificateChecked() throws {
        try drive(tls: true)
    }

    @Test(
        .enabled(
            if: Python.hasModule("websockets") && ChildProcess.exitStatus("/usr/bin/openssl", ["version"]) == 0,
            "needs Python websockets and openssl (scripts/setup installs them)"))
    func aGatewayWithAnUntrustedCertificateIsRefused() throws {
        let directory = TemporaryDirectory("pygateway")
        let (cert, key) = try Self.selfSignedCertificate(in: directory)
        let tokenFile = writeTokenFile("t", in: directory)
        let gateway = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/ws_gateway.py").path, "t", cert, key], mergeStandardError: true)
        defer { gateway.killIfRunning() }
        let port = Int(try gateway.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count))!
        // No --gateway-ca-file: the system's roots do not vouch for a self-signed certificate.
        let bridge = try BridgeDaemon(arguments: ["--gateway", "wss://localhost:\(port)", "--gateway-token-file", tokenFile])
        defer { bridge.stop() }
        let down = try bridge.waitForLog("gateway link down")
        #expect(down.lowercased().contains("certificate") || down.contains("handshake"), "\(down)")
    }

    /// A throwaway certificate for localhost, made with the openssl command.
    static func selfSignedCertificate(in directory: TemporaryDirectory) throws -> (cert: String, key: String) {
        let cert = directory.url.appendingPathComponent("cert.pem").path, key = directory.url.appendingPathComponent("key.pem").path
        let status = ChildProcess.exitStatus(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost",
            ])
        try #require(status == 0, "openssl could not make a certificate")
        return (cert, key)
    }

    private func drive(tls: Bool) throws {
        let token = "py-token-\(UUID().uuidString)"
        let directory = TemporaryDirectory("pygateway")
        let tokenFile = writeTokenFile(token, in: directory)
        let certificate = tls ? try Self.selfSignedCertificate(in: directory) : nil
        let gateway = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/ws_gateway.py").path, token]
                + (certificate.map { [$0.cert, $0.key] } ?? []),
            mergeStandardError: true)
        defer { gateway.killIfRunning() }
        let port = Int(try gateway.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count))!
        let link = certificate.map { ["--gateway", "wss://localhost:\(port)", "--gateway-ca-file", $0.cert] } ?? ["--gateway", "ws://127.0.0.1:\(port)"]
        let bridge = try BridgeDaemon(arguments: link + ["--gateway-token-file", tokenFile])
        defer { bridge.stop() }
        #expect(try gateway.waitForLine(timeout: 30) { $0.hasPrefix("hello ") } == "hello test-bridge")
        let node = try SimulatedNode(port: bridge.port)
        defer { node.stop() }
        try node.pair(with: bridge)
        let verdict = try gateway.waitForLine(timeout: 60) { $0 == "PASS" || $0.hasPrefix("FAIL") }
        #expect(verdict == "PASS")
        #expect(gateway.wait() == 0)
    }
}
