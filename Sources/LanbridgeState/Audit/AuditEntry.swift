import FoundationEssentials

/// One line of audit.jsonl.
public struct AuditEntry: Codable, Equatable, Sendable {
    public var time: Date
    public var event: String
    /// Who did it: `uid:<n>` for the CLI, `bridge` for the daemon.
    public var actor: String
    public var nodeId: String?
    public var requestId: String?
    public var detail: String?
    /// SHA-256 (hex) of the previous line's bytes; 64 zeros for the first line.
    public var prev: String
    /// The store change this entry belongs to: a change interrupted by a crash is completed on the
    /// next open, and its entries are not written twice.
    public var tx: String?

    public init(time: Date, event: String, actor: String, nodeId: String? = nil, requestId: String? = nil, detail: String? = nil) {
        (self.time, self.event, self.actor, self.nodeId, self.requestId, self.detail) = (time, event, actor, nodeId, requestId, detail)
        prev = ""
    }
}
