import Foundation
import LanbridgeState
import Testing
import TestSupport

/// Issue 49 §4: each limit once. The table in `Limit` drives the settings, the loader and the key
/// list; README's table is generated from it and must not drift (`LANBRIDGE_REGENERATE=1 swift test
/// --filter LimitTableTests` writes it).
struct LimitTableTests {
    static let begin = "<!-- limits:begin (generated from Sources/LanbridgeState/Config/Limit.swift; LimitTableTests checks it) -->\n"
    static let end = "\n<!-- limits:end -->"

    @Test func readmesTableIsTheCodes() throws {
        let shown = try #require(try Repository.generatedBlock(in: "README.md", begin: Self.begin, end: Self.end, wanted: Limit.markdownTable))
        #expect(shown == Limit.markdownTable, "README's limits table differs from Limit.swift; regenerate it with LANBRIDGE_REGENERATE=1")
    }

    /// The same table in lanbridge-config(5), which the package installs (issue 50 §3).
    @Test func theManPagesTableIsTheCodes() throws {
        let begin = ".\\\" limits:begin (generated from Sources/LanbridgeState/Config/Limit.swift; LimitTableTests checks it)\n"
        let wanted = Limit.manPageEntries + "\n"
        let shown = try #require(try Repository.generatedBlock(in: "packaging/lanbridge-config.5", begin: begin, end: ".\\\" limits:end", wanted: wanted))
        #expect(shown == wanted, "lanbridge-config(5)'s limits differ from Limit.swift; regenerate them with LANBRIDGE_REGENERATE=1")
    }

    /// A key an older lanbridge bounded something with still loads (an unknown key is an error),
    /// and sets nothing.
    @Test func aRetiredKeyLoadsAndSetsNothing() throws {
        for key in Limit.retired.keys {
            #expect(Limit(rawValue: key) == nil)
            let loaded = try BridgeSettings.parse(Data(#"{"limits": {"\#(key)": 5000}}"#.utf8))
            #expect(loaded.limits == BridgeSettings().limits, "\(key)")
        }
    }

    @Test func everyKeyLoadsWithinItsRangeAndNoneOutside() throws {
        for limit in Limit.allCases {
            let section = limit.spec.section.rawValue, range = limit.spec.range
            let ok = try BridgeSettings.parse(Data(#"{"\#(section)": {"\#(limit.key)": \#(range.upperBound)}}"#.utf8))
            #expect(ok.value(of: limit) == range.upperBound, "\(limit)")
            #expect(throws: BridgeSettings.ConfigError.self, "\(limit) above its range") {
                try BridgeSettings.parse(Data(#"{"\#(section)": {"\#(limit.key)": \#(range.upperBound + 1)}}"#.utf8))
            }
            if let defaultValue = limit.spec.defaultValue {
                #expect(range.contains(defaultValue), "\(limit)'s default is within its range")
                #expect(BridgeSettings().value(of: limit) == defaultValue, "\(limit)'s default is what the settings start with")
            }
        }
        // An unknown key is told the table's keys.
        do { _ = try BridgeSettings.parse(Data(#"{"limits": {"maxResultByte": 1}}"#.utf8)) } catch {
            #expect(error.description.contains("maxResultBytes") && error.description.contains("canvasRequestMs"), "\(error)")
        }
    }
}
