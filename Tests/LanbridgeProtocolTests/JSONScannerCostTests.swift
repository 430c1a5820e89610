import Foundation
import LanbridgeProtocol
import TestSupport
import Testing

/// The scanner reads every peer's bytes (nodes, paired or not, and the gateway) on the relay's
/// loop, so its work must be linear in what the peer sends, whatever the shape.
struct JSONScannerCostTests {
    /// Issue 21: 40,000 keys held the relay for 19 s (a set of keys copied for each key). 300,000
    /// keys would take the old scanner many minutes; a linear one a fraction of a second. The
    /// guard is a hang guard, not a timing claim.
    @Test func aWideObjectIsScannedInLinearTime() throws {
        let document = JSONShape.wideObject.document(size: 3_300_000)
        let done = DispatchSemaphore(value: 0)
        let result = Box()
        Thread.detachNewThread {
            result.members = try? JSONScanner.members(["a0", "a199999"], in: document)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 60) == .success, "scanning a 3.3 MB object of about 300,000 keys took over a minute")
        #expect(result.members?.count == 2)
    }

    final class Box: @unchecked Sendable { var members: [String: Range<Int>]? }

    /// Steps per input byte stay under a constant for every adversarial shape, and grow in
    /// proportion to the input (8× the bytes, about 8× the steps).
    @Test(arguments: JSONShape.allCases)
    func workPerByteIsBounded(_ shape: JSONShape) throws {
        let small = shape.document(size: 32 * 1024), large = shape.document(size: 256 * 1024)
        try JSONScanner.validate(small)
        try JSONScanner.validate(large)
        let (smallSteps, largeSteps) = (JSONScanner.steps(small), JSONScanner.steps(large))
        #expect(Double(largeSteps) / Double(large.count) < 3, "\(shape): \(largeSteps) steps for \(large.count) bytes")
        let growth = (Double(largeSteps) / Double(smallSteps)) / (Double(large.count) / Double(small.count))
        #expect(growth < 1.25, "\(shape): steps grew \(growth)× faster than the input")
    }

    @Test func duplicateKeysAreStillFoundInWideAndEscapedObjects() {
        var wide = JSONShape.wideObject.document(size: 100_000)
        wide.removeLast()
        wide.append(contentsOf: #","a17":1}"#.utf8)
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.validate(wide) }
        #expect(throws: JSONScanner.Invalid.self) { try JSONScanner.validate(Array(#"{"ab":1,"x":{"ab":2},"\u0061b":3}"#.utf8)) }
        // The same key in different objects is fine.
        #expect(throws: Never.self) { try JSONScanner.validate(Array(#"[{"ab":1},{"\u0061b":2,"x":{"ab":3}}]"#.utf8)) }
    }
}

struct JSONNumberTests {
    /// Short tokens and their shortened long forms read exactly as the platform's parser reads
    /// the whole text.
    @Test func agreesWithTheWholeTextsValue() {
        var rng = SplitMix(state: 21)
        for _ in 0..<2000 {
            let intDigits = Int.random(in: 1...30, using: &rng), fracDigits = Int.random(in: 0...30, using: &rng)
            var token = Int.random(in: 0...1, using: &rng) == 0 ? "-" : ""
            token += String(Int.random(in: 1...9, using: &rng)) + String((1..<intDigits).map { _ in "0123456789".randomElement(using: &rng)! })
            if fracDigits > 0 { token += "." + String((0..<fracDigits).map { _ in "0123456789".randomElement(using: &rng)! }) }
            if Bool.random(using: &rng) { token += "e\(Int.random(in: -330...330, using: &rng))" }
            #expect(JSONNumber.double(Array(token.utf8)).bitPattern == Double(token)!.bitPattern, "\(token)")
            #expect(JSONNumber.isFinite(Array(token.utf8)) == Double(token)!.isFinite, "\(token)")
        }
    }

    @Test func theEdgeOfADoublesRangeIsDecidedExactly() {
        let tail = String(repeating: "0", count: 2000)
        #expect(JSONNumber.isFinite(Array("1.7976931348623157\(tail)e308".utf8)))
        #expect(!JSONNumber.isFinite(Array("1.7976931348623159\(tail)e308".utf8)))
        // just below the halfway point to the next (infinite) step, with the difference 900 digits in
        #expect(JSONNumber.isFinite(Array(("1.797693134862315807937" + String(repeating: "0", count: 900) + "e308").utf8)) == Double("1.797693134862315807937e308")!.isFinite)
        #expect(JSONNumber.double(Array(("0." + String(repeating: "0", count: 5000) + "1").utf8)) == 0)
        #expect(!JSONNumber.isFinite(Array(("1e" + String(repeating: "9", count: 100_000)).utf8)))
        #expect(JSONNumber.isFinite(Array(("1e-" + String(repeating: "9", count: 100_000)).utf8)))
        #expect(JSONNumber.double(Array(("1" + String(repeating: "0", count: 300) + ".25").utf8)) == 1e300)
    }
}
