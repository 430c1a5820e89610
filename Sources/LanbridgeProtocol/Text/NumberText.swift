/// Numbers written for people, without Foundation's `String(format:)`.
public enum NumberText {
    /// `value` with `places` digits after the point, rounded half away from zero ("2.5", "0.0").
    public static func fixed(_ value: Double, places: Int = 1) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<max(0, places) { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else { return "\(value)" }  // beyond Int64's exact range: as Swift prints it
        let whole = Int64(scaled)
        let unit = Int64(scale)
        let sign = value < 0 && whole != 0 ? "-" : ""
        guard places > 0 else { return sign + String(whole) }
        let fraction = String(whole % unit)
        return sign + String(whole / unit) + "." + String(repeating: "0", count: places - fraction.count) + fraction
    }

    /// A file mode in octal, three digits at least ("600", "0755" stays "755").
    /// A duration as people read it: "45s", "2m5s", "1h3m" (whole seconds, rounded).
    public static func duration(seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? "\(s / 3600)h\(s % 3600 / 60)m" : s >= 60 ? "\(s / 60)m\(s % 60)s" : "\(max(s, 0))s"
    }

    public static func octalMode(_ mode: some BinaryInteger) -> String {
        let digits = String(mode, radix: 8)
        return digits.count >= 3 ? digits : String(repeating: "0", count: 3 - digits.count) + digits
    }
}
