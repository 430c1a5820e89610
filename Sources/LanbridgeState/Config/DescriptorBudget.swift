/// The file descriptors a configuration needs: one per paired node's connection (two with the
/// OpenClaw gateway protocol, which gives each node its own socket at the gateway), the
/// unauthenticated connections admission lets in, and a reserve for the bridge itself
/// (listeners, the gateway link, state files, Avahi, the control socket, metrics).
public struct DescriptorBudget: Equatable, Sendable {
    public static let reserve = 64
    public var paired: Int
    public var openClaw: Bool
    public var unauthenticated: Int
    /// What the HTTP listeners (metrics, console, the browser door's page) may hold together: each is capped.
    public var http: Int
    /// The canvas relay's connections (`limits[.canvasConnections]`), each with its upstream one.
    public var canvas: Int

    public init(paired: Int, openClaw: Bool, unauthenticated: Int, http: Int = 0, canvas: Int = 0) {
        (self.paired, self.openClaw, self.unauthenticated, self.http, self.canvas) = (paired, openClaw, unauthenticated, http, canvas)
    }

    public var needed: Int { paired * (openClaw ? 2 : 1) + unauthenticated + http + 2 * canvas + Self.reserve }

    /// What to tell the admin when `limit` (the soft RLIMIT_NOFILE) is too low, else nil.
    public func shortfall(limit: Int) -> String? {
        guard limit < needed else { return nil }
        let perNode = openClaw ? " (two descriptors each with the OpenClaw gateway)" : ""
        return "the open-file limit is \(limit), below the \(needed) this configuration needs: \(paired) paired nodes\(perNode), "
            + "\(unauthenticated) connections not yet paired (admission.maxUnauthenticated and maxWaiting), \(http) for the HTTP listeners, "
            + "\(2 * canvas) for the canvas relay (limits.canvasConnections, with their upstream ones) "
            + "and \(Self.reserve) for the bridge; "
            + "connections past the limit are refused. Raise it: LimitNOFILE= in the service unit, or ulimit -n"
    }
}
