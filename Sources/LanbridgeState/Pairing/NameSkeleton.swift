import Foundation

/// What a display name looks like to a person, for spotting lookalikes: "Ada’s phone", "ADA'S
/// PHONE" and "Аda's phone" (Cyrillic А) all have the skeleton of "Ada's phone". Compatibility
/// normalisation, case and width folding, format characters (zero-width joiners) removed, white
/// space collapsed, and the common confusables of Latin letters mapped to them (after Unicode
/// TS #39's confusables, the subset that phones' keyboards and name fields produce).
public enum NameSkeleton {
    public static func of(_ name: String) -> String {
        let folded = name.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
        var out = String.UnicodeScalarView()
        var lastWasSpace = true
        for scalar in folded.unicodeScalars {
            if scalar.properties.generalCategory == .format || scalar.properties.generalCategory == .control { continue }
            if scalar.properties.isWhitespace {
                if !lastWasSpace { out.append(" ") }
                lastWasSpace = true
                continue
            }
            lastWasSpace = false
            out.append(confusables[scalar] ?? scalar)
        }
        return String(out).trimmingCharacters(in: .whitespaces)
    }

    private static let confusables: [Unicode.Scalar: Unicode.Scalar] = {
        let pairs: [(String, Character)] = [
            ("’‘ʼʹ`´′‛", "'"), ("“”„‟″", "\""), ("‐‑‒–—―−", "-"),
            ("аɑα", "a"), ("в", "b"), ("сϲ", "c"), ("ԁ", "d"), ("еєε", "e"), ("ɡ", "g"), ("һ", "h"),
            ("іιı1|ӏ", "l"), ("ј", "j"), ("κк", "k"), ("м", "m"), ("пη", "n"), ("оοσ0", "o"), ("рρ", "p"),
            ("ԛ", "q"), ("г", "r"), ("ѕ", "s"), ("τт", "t"), ("υ", "u"), ("νѵ", "v"), ("ԝω", "w"), ("хχ", "x"),
            ("уγ", "y"), ("ᴢ", "z"),
        ]
        var map: [Unicode.Scalar: Unicode.Scalar] = [:]
        for (sources, target) in pairs {
            for source in sources.unicodeScalars { map[source] = target.unicodeScalars.first }
        }
        // "i" and "l" look alike in many fonts; both become "l".
        map["i"] = "l"
        return map
    }()
}
