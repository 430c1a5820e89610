import CQRencode

/// Renders text as a QR code for a terminal, two modules per character with half blocks, with the
/// quiet zone the standard asks for. Nil if libqrencode cannot encode it.
enum QRCode {
    static func render(_ text: String) -> String? {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width), quiet = 4  // ISO/IEC 18004: four modules
        let size = width + 2 * quiet
        func dark(_ x: Int, _ y: Int) -> Bool {
            let (cx, cy) = (x - quiet, y - quiet)
            guard cx >= 0, cy >= 0, cx < width, cy < width else { return false }
            return code.pointee.data[cy * width + cx] & 1 == 1
        }
        var lines: [String] = []
        for y in stride(from: 0, to: size, by: 2) {
            var line = ""
            for x in 0..<size {
                // Light text on a dark terminal would invert the code, so draw light modules as blocks.
                switch (!dark(x, y), y + 1 < size ? !dark(x, y + 1) : true) {
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
}
