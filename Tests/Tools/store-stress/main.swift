// lanbridge-store-stress: a test helper process that hammers the pairing store.
//
//   lanbridge-store-stress add <state-dir> <count> [<pad>]
//   lanbridge-store-stress migrate <state-dir>
//
// add: optionally pads paired.json with <pad> nodes in one update (so each write takes a while),
// then files and approves <count> pairing requests, one update each, printing "committed <nodeId>"
// after each update returns.
// migrate: opens the store as a lanbridge whose paired.json is format 2 (one step from 1, which
// changes nothing but the number) and migrates it, as the daemon does at start; prints
// "migrated <what>".
import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores

/// Unbuffered, so a line the test reads is a commit that already happened.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let args = CommandLine.arguments
if args.count == 3, args[1] == "migrate" {
    var versions = StateFormat.current.versions
    versions[.paired] = 2
    let formats = StateFormat(versions: versions, migrations: [.init(file: .paired, from: 1) { $0 }], unversioned: StateFormat.current.unversioned)
    do {
        let done = try PairingStore(directory: StateDirectory(url: URL(fileURLWithPath: args[2])), lockTimeout: 60, formats: formats).migrate(actor: "bridge")
        say("migrated \(done.joined(separator: ", "))")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("lanbridge-store-stress: \(error)\n".utf8))
        exit(1)
    }
}
guard args.count >= 4, args[1] == "add", let count = Int(args[3]) else {
    FileHandle.standardError.write(Data("usage: lanbridge-store-stress add <state-dir> <count> [<pad>] | migrate <state-dir>\n".utf8))
    exit(64)
}
let store = PairingStore(directory: StateDirectory(url: URL(fileURLWithPath: args[2])), lockTimeout: 60)
let details = NodeDetails(displayName: "stress \(getpid())", platform: "linux", caps: ["canvas"], commands: ["canvas.present"])

func pairNewNode(in state: inout PairingState) throws -> PairedNode {
    let key = PublicKey(bytes: SecureRandom.bytes(32))!
    let request = try state.requestPairing(key: key, details: details, source: "127.0.0.1", now: Date())
    state.setCode("000000", requestId: request.requestId)
    return try state.approve(requestId: request.requestId, code: "000000", access: AccessRules(allow: ["canvas.*"]), now: Date())
}

do {
    if args.count >= 5, let pad = Int(args[4]), pad > 0 {
        try store.update { state in for _ in 0..<pad { _ = try pairNewNode(in: &state) } }
        say("padded \(pad)")
    }
    for _ in 0..<count {
        let node = try store.update { try pairNewNode(in: &$0) }
        say("committed \(node.nodeId)")
    }
} catch {
    FileHandle.standardError.write(Data("lanbridge-store-stress: \(error)\n".utf8))
    exit(1)
}
