import FoundationEssentials
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeCore
import LanbridgeState
import LanbridgeNet
import Logging
import NIOCore
import NIOPosix

/// The operator's way into the running daemon (`lanbridge nodes invoke`): a Unix socket in the
/// state directory that accepts only its own user, root, and (in a directory shared with a group,
/// `StateSharing`) that group's members, checked with SO_PEERCRED and the user database. It speaks
/// the gateway's request/response frames, one JSON object per line, and its invokes go through
/// exactly the same checks as the gateway's (PROTOCOL.md §12.7).
enum ControlSocket {
    static let fileName = "control.sock"
    static let maxLine = 64 << 20

    typealias Connection = NIOAsyncChannel<[UInt8], [ArraySlice<UInt8>]>

    static func bind(path: String, driver: BridgeDriver, logger: Logger) async throws -> NIOAsyncChannel<Connection, Never> {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxLength: maxLine)))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(LineEncoder()))
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        // Connecting needs write permission on the socket: the owner's, or the sharing group's.
        let sharing = StateSharing.of(URL(fileURLWithPath: path).deletingLastPathComponent())
        if case let .group(gid) = sharing { _ = chown(path, uid_t.max, gid) }
        chmod(path, sharing.fileMode)
        return server
    }

    static func serve(
        _ connection: Connection, driver: BridgeDriver, sharing: StateSharing, console: (auth: ConsoleAuth, url: String)? = nil,
        logger: Logger
    ) async {
        let peer = try? await PeerCredentials.of(connection.channel).get()
        guard let peer, admits(peer, sharing: sharing) else {
            logger.warning("control socket: refused a connection from another user", metadata: ["uid": "\(peer.map { String($0.uid) } ?? "unknown")"])
            try? await connection.executeThenClose { _, _ in }
            return
        }
        // An operator who gives up (Ctrl-C) takes their held invokes along: nothing runs later for nobody.
        let client = ControlSocket.clientOpened()
        connection.channel.closeFuture.whenComplete { _ in driver.controlClientClosed(client) }
        try? await connection.executeThenClose { inbound, outbound in
            for try await line in inbound {
                let frame: GatewayFrame
                do throws(GatewayFrame.DecodingError) { frame = try GatewayFrame.decode(line) } catch {
                    let id = error.requestID ?? ""
                    try await outbound.write(GatewayFrame.response(id: id, answer: .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(error)"))))
                    continue
                }
                guard case let .request(id, method, params) = frame else { continue }
                let answer = await dispatch(method, params, caller: peer.uid, client: client, driver: driver, console: console, logger: logger)
                try await outbound.write(GatewayFrame.response(id: id, answer: answer))
            }
        }
    }

    /// The operator's control socket: each connection served on its own, until the socket closes.
    static func serveAll(
        _ control: NIOAsyncChannel<ControlSocket.Connection, Never>, driver: BridgeDriver, sharing: StateSharing,
        console: (auth: ConsoleAuth, url: String)?, logger: Logger
    ) async {
        try? await control.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { connections in
                for try await connection in inbound {
                    connections.addTask { await serve(connection, driver: driver, sharing: sharing, console: console, logger: logger) }
                }
            }
        }
    }

    /// The one dispatcher of the operator's methods: each goes where its row in `ControlMethod`'s
    /// table says (the gateway's requests reach the core by its link, and the core checks `callers`).
    static func dispatch(
        _ method: String, _ params: JSONValue?, caller: UInt32, client: Int, driver: BridgeDriver,
        console: (auth: ConsoleAuth, url: String)?, logger: Logger
    ) async -> InvokeAnswer {
        guard let known = ControlMethod(rawValue: method) else {
            let names = ControlMethod.allCases.map(\.name).joined(separator: ", ")
            return .failure(ErrorMessage(code: ErrorMessage.unknownMethod, message: "unknown method \"\(SafeText.escape(String(method.prefix(64))))\" (\(names))"))
        }
        switch known.spec.answeredBy {
        case .socket:
            return consoleRequest(known, params, console, caller: caller, logger: logger)
        case .driver:
            return await driver.carryOut(known)
        case .core:
            // Who answered an asked invoke is the kernel's word (the peer's uid), not the client's.
            var sent = params
            if known == .askAnswer, case var .object(fields)? = sent {
                fields["answeredBy"] = .string("uid:\(caller)")
                sent = .object(fields)
            }
            return await driver.request(known, params: sent, client: client)
        }
    }

    private static func consoleRequest(
        _ method: ControlMethod, _ params: JSONValue?, _ console: (auth: ConsoleAuth, url: String)?, caller: UInt32,
        logger: Logger
    ) -> Result<InvokePayload, ErrorMessage> {
        guard let console else {
            return .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the console is off (serve --no-ui, ui.enabled false, or its address was taken)"))
        }
        // Root may act for another uid (`sudo lanbridge ui` opens the link in the invoking user's
        // browser); anyone else only for themselves.
        var uid = caller
        if case let .number(asked)? = params?["uid"] {
            guard asked >= 0, asked < 4_294_967_295, asked == asked.rounded() else {
                return .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "uid is a whole number"))
            }
            guard caller == 0 || UInt32(asked) == caller else {
                return .failure(ErrorMessage(code: ErrorMessage.forbidden, message: "only root may act for another user"))
            }
            uid = UInt32(asked)
        }
        let everyone = caller == 0 && params?["all"] == true
        switch method {
        case .consoleLogin:
            let token = console.auth.mintLogin(uid: uid)
            logger.notice("console: login link issued", metadata: ["uid": "\(uid)", "by": "\(caller)"])
            return .success(
                .value([
                    "url": .string("\(console.url)/login?token=\(token)"), "base": .string(console.url), "expiresInSeconds": 60,
                    "uid": .number(Double(uid)),
                ]))
        case .consoleSessions:
            let listed = console.auth.list(uid: everyone ? nil : uid).map { session -> JSONValue in
                [
                    "uid": .number(Double(session.uid)), "created": .string(ISO8601Text.string(session.created)),
                    "lastUsed": .string(ISO8601Text.string(session.lastUsed)),
                ]
            }
            return .success(.value(["sessions": .array(listed)]))
        default:
            let ended = console.auth.endAll(uid: everyone ? nil : uid)
            logger.notice("console: sessions ended", metadata: ["uid": everyone ? "all" : "\(uid)", "by": "\(caller)", "ended": "\(ended)"])
            return .success(.value(["ended": .number(Double(ended))]))
        }
    }

    /// The daemon's user, root, or a member of the sharing group (its primary group, or listed in
    /// the group database: a member removed there loses access even with an old login's groups).
    static func admits(_ peer: PeerCredentials, sharing: StateSharing) -> Bool {
        if peer.uid == getuid() || peer.uid == 0 { return true }
        guard case let .group(gid) = sharing else { return false }
        guard let entry = getpwuid(peer.uid) else { return false }
        if entry.pointee.pw_gid == gid { return true }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(entry.pointee.pw_name, entry.pointee.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(entry.pointee.pw_name, entry.pointee.pw_gid, &groups, &count) >= 0 else { return false }
        }
        return groups.prefix(Int(count)).contains(gid)
    }
}

/// Splits a byte stream at newlines; a line longer than `maxLength` is an error that closes the socket.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]
    let maxLength: Int

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maxLength { throw TransportError.messageTooLarge(size: buffer.readableBytes, limit: maxLength) }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        let line = buffer.readBytes(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }
}

/// Writes one message, given as parts, and a newline: one frame per line, always. The parts are
/// strict JSON (a node's result passed `JSONScanner`), where a raw CR or LF can only be white space
/// between tokens, so writing each as a space changes no value and keeps a frame on its line.
struct LineEncoder: MessageToByteEncoder {
    typealias OutboundIn = [ArraySlice<UInt8>]
    func encode(data: [ArraySlice<UInt8>], out: inout ByteBuffer) throws {
        for part in data {
            let start = out.writerIndex
            out.writeBytes(part)
            guard part.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { continue }
            let offset = start - out.readerIndex
            out.withUnsafeMutableReadableBytes { buffer in
                for k in offset..<buffer.count where buffer[k] == 0x0A || buffer[k] == 0x0D { buffer[k] = 0x20 }
            }
        }
        out.writeInteger(UInt8(ascii: "\n"))
    }
}
