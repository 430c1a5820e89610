import CAvahiClient

/// One synchronous question for `lanbridge doctor`: can we reach avahi-daemon right now?
public enum AvahiProbe {
    /// The daemon's version string, or an error saying what is wrong.
    public static func check() -> Result<String, AvahiError> {
        guard let poll = avahi_simple_poll_new() else { return .failure(AvahiError(code: Int32(AVAHI_ERR_NO_MEMORY), context: "poll")) }
        defer { avahi_simple_poll_free(poll) }
        var error: Int32 = 0
        // Without NO_FAIL, creation fails at once when the daemon (or the system bus) is absent.
        guard let client = avahi_client_new(avahi_simple_poll_get(poll), AvahiClientFlags(rawValue: 0), { _, _, _ in }, nil, &error) else {
            return .failure(AvahiError(code: error, context: "avahi-daemon"))
        }
        defer { avahi_client_free(client) }
        return .success(avahi_client_get_version_string(client).map { String(cString: $0) } ?? "avahi")
    }
}
