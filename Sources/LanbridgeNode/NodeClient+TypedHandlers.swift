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
                decoded = try JSONDecoder().decode(Params.self, from: JSONEncoder().encode(params ?? .object([:])))
            } catch {
                throw LanbridgeError(code: LanbridgeError.invalidParams, message: "\(command): params do not match: \(error)")
            }
            return try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(try await handler(decoded)))
        }
    }
}
