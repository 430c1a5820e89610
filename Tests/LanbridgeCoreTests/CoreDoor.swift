import Foundation
import LanbridgeCore
import LanbridgeProtocol

extension BridgeCore {
    /// One event through the core's one door (`handle`), at `now` (the last event's, when not
    /// given) and `wall` (a fixed day, when not given): tests reach the core only this way.
    @discardableResult
    mutating func on(_ event: BridgeEvent, now: Moment? = nil, wall: Date? = nil) -> [BridgeAction] {
        handle(event, now: now ?? self.now, wall: wall ?? Date(timeIntervalSince1970: 1_800_000_000))
    }
}
