#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import LanbridgeProtocol

extension NodeClient {
    /// Registers a handler whose params and result are your own Codable types:
    ///
    ///     struct Snapshot: Decodable { var width: Int? }
    ///     struct Image: Encodable { var format = "png"; var base64: String }
    ///     await client.handle("canvas.snapshot") { (p: Snapshot) in Image(base64: render(p.width)) }
    ///
    /// Params that do not decode as `Params` are answered `INVALID_PARAMS` without calling you
    /// (absent params decode as `{}`); throw a `LanbridgeError` to answer with its code.
    public func handle<Params: Decodable & Sendable, Output: Encodable & Sendable>(
        _ command: String, _ handler: @escaping @Sendable (Params) async throws -> Output
    ) {
        handle(command) { (params: JSONValue?) async throws -> JSONValue in
            let decoded: Params
            do {
                decoded = try LanbridgeJSON.decoder.decode(Params.self, from: LanbridgeJSON.compact.encode(params ?? .object([:])))
            } catch {
                throw LanbridgeError(code: LanbridgeError.invalidParams, message: "\(command): params do not match: \(error)")
            }
            return try LanbridgeJSON.decoder.decode(JSONValue.self, from: LanbridgeJSON.compact.encode(try await handler(decoded)))
        }
    }
}
