import FoundationEssentials

/// What a display name looks like to a person, for spotting lookalikes: "Ada’s phone", "ADA'S
/// PHONE" and "Аda's phone" (Cyrillic А) all have the skeleton of "Ada's phone". Compatibility
/// mapping, case, diacritic and width folding scalar by scalar (`foldingTable`, made from
/// Foundation's), format characters (zero-width joiners) removed, white space collapsed, and the
/// common confusables of Latin letters mapped to them (after Unicode TS #39's confusables, the
/// subset that phones' keyboards and name fields produce). Conjoining Hangul jamo are not
/// composed into syllables (Foundation did): a name typed in jamo is its own skeleton.
public enum NameSkeleton {
    public static func of(_ name: String) -> String {
        skeleton(ofFolded: name.unicodeScalars.lazy.flatMap(folded))
    }

    /// What `scalar` folds to (`foldingTable`; most fold to themselves).
    static func folded(_ scalar: Unicode.Scalar) -> [Unicode.Scalar] { folding[scalar.value] ?? [scalar] }

    /// The steps after folding: formats and controls out, white space collapsed, confusables mapped.
    static func skeleton(ofFolded scalars: some Sequence<Unicode.Scalar>) -> String {
        var out = String.UnicodeScalarView()
        var lastWasSpace = true
        for scalar in scalars {
            if scalar.properties.generalCategory == .format || scalar.properties.generalCategory == .control { continue }
            if scalar.properties.isWhitespace {
                if !lastWasSpace { out.append(" ") }
                lastWasSpace = true
                continue
            }
            lastWasSpace = false
            out.append(confusables[scalar] ?? scalar)
        }
        return String(out).trimmingWhitespace()
    }

    /// `foldingTable` read once: a scalar's value to what it folds to.
    private static let folding: [UInt32: [Unicode.Scalar]] = {
        var map: [UInt32: [Unicode.Scalar]] = [:]
        for line in foldingTable.split(separator: "\n") {
            let values = line.split(separator: " ").compactMap { UInt32($0, radix: 16) }
            guard let key = values.first else { continue }
            map[key] = values.dropFirst().compactMap(Unicode.Scalar.init)
        }
        return map
    }()

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
