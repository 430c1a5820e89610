import Foundation
@testable import LanbridgeState
import TestSupport
import Testing

/// Issue 40: NameSkeleton folds without Foundation, from a table made from Foundation's folding
/// (scripts/generate-name-folding). Here the table and the result are held against Foundation;
/// scripts/test-package runs it (LANBRIDGE_EQUIVALENCE=1) with the sanitiser's.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["LANBRIDGE_EQUIVALENCE"] == "1",
        "run by scripts/test-package (LANBRIDGE_EQUIVALENCE=1): every scalar against Foundation"))
struct NameSkeletonEquivalenceTests {
    static func foundationFold(_ text: String) -> String {
        text.precomposedStringWithCompatibilityMapping.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }

    /// The skeleton as Foundation made it: its folding of the whole name, then the same steps.
    static func foundationSkeleton(_ name: String) -> String {
        NameSkeleton.skeleton(ofFolded: foundationFold(name).unicodeScalars)
    }

    /// Fails when the toolchain's Foundation folds differently from the table: run
    /// scripts/generate-name-folding.
    @Test func theTableIsFoundationsFoldingOfEveryScalar() {
        var checked = 0
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let expected: [Unicode.Scalar]
            switch scalar.properties.generalCategory {
            case .unassigned, .surrogate, .privateUse, .control, .format: continue
            case .nonspacingMark, .spacingMark, .enclosingMark:  // as it folds after a letter
                expected = Array(Self.foundationFold("x" + String(scalar)).unicodeScalars.dropFirst())
            default:
                expected = Array(Self.foundationFold(String(scalar)).unicodeScalars)
            }
            #expect(NameSkeleton.folded(scalar) == expected, "U+\(String(value, radix: 16))")
            checked += 1
        }
        #expect(checked > 150_000)  // every assigned scalar of Unicode 17 but controls, formats and private use
    }

    @Test func namesGetFoundationsSkeleton() {
        var random = SplitMix(state: 40)
        let alphabets: [String] = [
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 '’-",
            "àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÉÎÕÜßæœøÆŒØ",
            "\u{300}\u{301}\u{302}\u{308}\u{30A}\u{327}\u{20DD}",
            "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΣΩάέήί",
            "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВЁЖ",
            "ＡＢＣａｂｃ０１２ﬁﬂ①②ⅠⅡ¹²½ℌℍ𝐀𝐁𝒜",
            "\u{200D}\u{200B}\u{A0}\u{2003}\u{3000}\t",
        ]
        let pools = alphabets.map { Array($0.unicodeScalars) }
        let marks = Set(alphabets[2].unicodeScalars)
        #expect(marks.allSatisfy { NameSkeleton.folded($0).isEmpty })
        for _ in 0..<5_000 {
            var name = String.UnicodeScalarView([Unicode.Scalar(UInt8(ascii: "a"))])
            for _ in 0..<Int.random(in: 0..<16, using: &random) {
                let pool = pools[Int.random(in: 0..<pools.count, using: &random)]
                name.append(pool[Int.random(in: 0..<pool.count, using: &random)])
            }
            let text = String(name)
            // A mark Foundation drops after a letter is dropped wherever it stands: Foundation kept
            // it when stacked on another, enclosing, or after a letter with no precomposed form, so
            // "a\u{30A}\u{30A}" escaped the skeleton of "a". The reference sees the name without them.
            let unmarked = String(String.UnicodeScalarView(text.unicodeScalars.filter { !marks.contains($0) }))
            #expect(NameSkeleton.of(text) == Self.foundationSkeleton(unmarked), "\(text.debugDescription)")
        }
    }
}

struct NameSkeletonMarkTests {
    /// Marks fold away wherever they stand. (Foundation folded these two names too; the names on
    /// which it kept a mark, depending on the letters around it, are in the corpus test above.)
    @Test func stackedAndEnclosingMarksDoNotMakeANewSkeleton() {
        #expect(NameSkeleton.of("Ada\u{30A}\u{30A}'s phone") == NameSkeleton.of("Ada's phone"))
        #expect(NameSkeleton.of("A\u{20DD}da's phone") == NameSkeleton.of("Ada's phone"))
    }
}
