import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// Issue 62 §2: one table of control methods. PROTOCOL.md §12.7 lists every method from it and
/// must not drift (`LANBRIDGE_REGENERATE=1 swift test --filter ControlMethodTableTests` writes it).
struct ControlMethodTableTests {
    static let begin = "<!-- control-methods:begin (generated from Sources/LanbridgeProtocol/Control/ControlMethod.swift; ControlMethodTableTests checks it) -->\n"
    static let end = "\n<!-- control-methods:end -->"

    @Test func protocolMdListsEveryMethodOfTheTable() throws {
        let shown = try #require(try Repository.generatedBlock(in: "pairing/PROTOCOL.md", begin: Self.begin, end: Self.end, wanted: ControlMethod.markdownTable))
        #expect(shown == ControlMethod.markdownTable, "PROTOCOL.md §12.7 differs from ControlMethod.swift; regenerate it with LANBRIDGE_REGENERATE=1")
        for method in ControlMethod.allCases { #expect(shown.contains("| `\(method.name)` |"), "PROTOCOL.md lacks \(method.name)") }
    }

    /// A method's name is written once: in the table. No code line elsewhere spells it, but
    /// OpenClaw's protocol, whose own events share two of the names (`node.invoke.cancel`).
    @Test func noSourceFileSpellsAMethodName() throws {
        let sources = Repository.url("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)).compactMap { $0 as? URL }
            .filter { $0.pathExtension == "swift" && $0.lastPathComponent != "ControlMethod.swift" && !$0.path.contains("/Gateway/OpenClaw/") }
        #expect(files.count > 100)
        for file in files {
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            for method in ControlMethod.allCases {
                #expect(!code.contains("\"\(method.name)\""), "\(file.lastPathComponent) spells \"\(method.name)\"; use ControlMethod.\(method)")
            }
        }
    }

    /// Only the §12.3 methods reach the gateway; the socket-answered ones need the caller's uid.
    @Test func whoMayCallWhat() {
        #expect(ControlMethod.gatewayMethods.map(\.name) == ["node.list", "node.describe", "node.invoke", "node.invoke.cancel"])
        for method in ControlMethod.allCases where method.spec.answeredBy != .core {
            #expect(method.spec.callers == .operatorOnly, "\(method.name)")
        }
    }
}
