import CQRencode

/// A QR code of some text (libqrencode, level M), drawn for a terminal (`invite`) or as SVG (the
/// console), each with the four-module quiet zone ISO/IEC 18004 asks for.
public struct QRCode: Sendable {
    public let width: Int
    private let dark: [Bool]
    static let quiet = 4

    /// Nil if libqrencode cannot encode it.
    public init?(_ text: String) {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        width = Int(code.pointee.width)
        dark = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
    }

    /// Whether a module is dark, the quiet zone included (outside the symbol is light).
    func isDark(_ x: Int, _ y: Int) -> Bool {
        let (cx, cy) = (x - Self.quiet, y - Self.quiet)
        guard cx >= 0, cy >= 0, cx < width, cy < width else { return false }
        return dark[cy * width + cx]
    }

    /// Two modules per character with half blocks.
    public var terminal: String {
        let size = width + 2 * Self.quiet
        var lines: [String] = []
        for y in stride(from: 0, to: size, by: 2) {
            var line = ""
            for x in 0..<size {
                // Light text on a dark terminal would invert the code, so draw light modules as blocks.
                switch (!isDark(x, y), y + 1 < size ? !isDark(x, y + 1) : true) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// One path of unit squares on a white ground, `pixels` wide; crisp at any zoom.
    public func svg(pixels: Int = 264, label: String) -> String {
        let size = width + 2 * Self.quiet
        var path = ""
        for y in 0..<size { for x in 0..<size where isDark(x, y) { path += "M\(x) \(y)h1v1h-1z" } }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="\(HTML.escape(label))" width="\(pixels)" height="\(pixels)" \
            viewBox="0 0 \(size) \(size)" shape-rendering="crispEdges"><rect width="\(size)" height="\(size)" fill="#fff"/><path fill="#000" d="\(path)"/></svg>
            """
    }
}
